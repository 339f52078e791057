import { html, type SafeHtml } from '../../http/html.ts';
import type { DayActivity } from '../activity/service.ts';
import { table } from './views.ts';

const W = 720;
const H = 200;
const PAD = { top: 12, right: 8, bottom: 26, left: 40 };

/** Activations and validations per day as an SVG bar chart rendered on the server (no script), with the same numbers as a table. */
export function activityChart(days: DayActivity[], caption: string, o: { tableOpen?: boolean } = {}): SafeHtml {
  const max = Math.max(1, ...days.map((d) => Math.max(d.activations, d.validations)));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const slot = innerW / days.length;
  const bar = Math.max(2, slot / 2 - 1.5);
  const y = (v: number) => PAD.top + innerH - (v / max) * innerH;
  const totals = days.reduce((t, d) => ({ a: t.a + d.activations, v: t.v + d.validations }), { a: 0, v: 0 });
  const bars = days.map((d, i) => {
    const x = PAD.left + i * slot + 1;
    return html`<rect class="bar-a" x="${x.toFixed(1)}" y="${y(d.activations).toFixed(1)}" width="${bar.toFixed(1)}" height="${(PAD.top + innerH - y(d.activations)).toFixed(1)}"><title>${d.date}: ${d.activations} activations</title></rect><rect class="bar-v" x="${(x + bar + 1).toFixed(1)}" y="${y(d.validations).toFixed(1)}" width="${bar.toFixed(1)}" height="${(PAD.top + innerH - y(d.validations)).toFixed(1)}"><title>${d.date}: ${d.validations} validations</title></rect>`;
  });
  const labels = days
    .map((d, i) => ({ d, i }))
    .filter(({ i }) => (days.length - 1 - i) % 7 === 0)
    .map(({ d, i }) => html`<text x="${(PAD.left + i * slot + slot / 2).toFixed(1)}" y="${H - 8}" text-anchor="middle">${d.date.slice(5)}</text>`);
  return html`<figure class="card" aria-labelledby="chart-caption">
<div class="card-head"><h2 id="chart-caption">${caption}</h2><p class="hint">Last 30 days: ${totals.a} activations, ${totals.v} validations</p></div>
<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${caption}: ${totals.a} activations and ${totals.v} validations in the last 30 days">
<line x1="${PAD.left}" y1="${PAD.top + innerH}" x2="${W - PAD.right}" y2="${PAD.top + innerH}" stroke="#e5e7eb"/>
<text x="${PAD.left - 6}" y="${PAD.top + 8}" text-anchor="end">${max}</text><text x="${PAD.left - 6}" y="${PAD.top + innerH}" text-anchor="end">0</text>
${bars}${labels}
</svg>
<p class="legend"><span class="a">Activations</span><span class="v">Validations</span></p>
<details class="more"${o.tableOpen ? html` open` : ''}><summary>Show the numbers</summary>
${table(
  `${caption} per day`,
  ['Day', { text: 'Activations', className: 'num' }, { text: 'Validations', className: 'num' }],
  [...days].reverse().map((d) => html`<tr><td>${d.date}</td><td class="num">${d.activations}</td><td class="num">${d.validations}</td></tr>`),
)}
</details>
</figure>`;
}
