import { BASE_CSS, COPY_JS } from '../../http/web/assets.ts';

/** The portal's stylesheet (the web kit's base and the license cards) and its script, served from /portal/assets. */
export const PORTAL_CSS = `${BASE_CSS}
.brand { display: inline-flex; align-items: center; gap: 10px; }
.brand-logo { height: 32px; width: auto; max-width: 160px; }
.vendor { display: flex; align-items: center; gap: 8px; margin: 0 0 8px; color: var(--muted); font-size: 14px; }
.vendor-logo { height: 20px; width: auto; max-width: 80px; }
.key { display: flex; align-items: center; gap: 10px; flex-wrap: wrap; background: var(--bg); border-radius: 8px; padding: 10px 14px; }
.key code { font: 17px/1.4 ui-monospace, Menlo, Consolas, monospace; letter-spacing: .04em; overflow-wrap: anywhere; flex: 1 1 auto; }
.key button { padding: 6px 14px; font-size: 14px; }
dl.facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 12px; margin: 16px 0 0; }
dl.facts div { border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
dl.facts dt { font-size: 13px; color: var(--muted); }
dl.facts dd { margin: 2px 0 0; font-weight: 600; }
ul.devices { list-style: none; margin: 0; padding: 0; border: 1px solid var(--line); border-radius: 8px; }
ul.devices li { padding: 10px 12px; border-top: 1px solid var(--line); display: flex; justify-content: space-between; gap: 4px 12px; flex-wrap: wrap; }
ul.devices li:first-child { border-top: 0; }
.device-id { color: var(--muted); font: 13px ui-monospace, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.device-date { color: var(--muted); font-size: 14px; }
.reset { margin-top: 12px; display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
.reset p { margin: 0; }
.note { white-space: pre-line; background: #eff6ff; border-left: 4px solid var(--brand); padding: 10px 14px; border-radius: 0 8px 8px 0; margin: 16px 0 0; }
.card-foot { display: flex; align-items: center; justify-content: space-between; gap: 12px; flex-wrap: wrap; margin-top: 18px; padding-top: 16px; border-top: 1px solid var(--line); }
.support { color: var(--muted); font-size: 14px; margin: 0; overflow-wrap: anywhere; }
.empty { text-align: center; color: var(--muted); }
@media (max-width: 560px) {
  .key code { font-size: 15px; }
  .card-foot .button { width: 100%; text-align: center; }
}
`;

/** The copy button of each license key (the web kit's copy script). */
export const PORTAL_JS = COPY_JS;
