import { html, type SafeHtml } from '../html.ts';

/** A message at the top of a page: success, warning or failure. */
export interface Notice {
  tone: 'ok' | 'warn' | 'bad';
  text: string;
}

/** Success is a polite status; warnings and failures are alerts (read out at once). */
export const renderNotice = (n: Notice | undefined): SafeHtml | undefined =>
  n && html`<div class="notice ${n.tone}" role="${n.tone === 'ok' ? 'status' : 'alert'}">${n.text}</div>`;
