import { expect, it } from 'vitest';
import { html } from '../../src/http/html.ts';

it('escapes every interpolated value, and only once through nested templates', () => {
  const name = `<b a="1" b='2'>&</b>`;
  expect(html`<p title="${name}">${name}</p>`.value).toBe(
    '<p title="&lt;b a=&quot;1&quot; b=&#39;2&#39;&gt;&amp;&lt;/b&gt;">&lt;b a=&quot;1&quot; b=&#39;2&#39;&gt;&amp;&lt;/b&gt;</p>',
  );
  const inner = html`<i>${name}</i>`;
  expect(html`<div>${inner}</div>`.value).toBe('<div><i>&lt;b a=&quot;1&quot; b=&#39;2&#39;&gt;&amp;&lt;/b&gt;</i></div>');
});

it('joins arrays and drops null, undefined and false (conditional parts)', () => {
  expect(html`<ul>${['<a>', html`<li>x</li>`]}</ul>`.value).toBe('<ul>&lt;a&gt;<li>x</li></ul>');
  expect(html`${null}${undefined}${false}${0}${'ok'}`.value).toBe('0ok');
});
