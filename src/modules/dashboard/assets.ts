import { BASE_CSS, COPY_JS } from '../../http/web/assets.ts';

/** The dashboard's stylesheet: the web kit's base plus navigation, tables, forms and the chart. */
export const DASHBOARD_CSS = `${BASE_CSS}
.topbar-inner, main, .subnav { max-width: 1180px; }
main.narrow { max-width: 460px; }
.nav { background: var(--card); border-bottom: 1px solid var(--line); }
.nav ul { list-style: none; margin: 0 auto; padding: 0 20px; max-width: 1180px; display: flex; gap: 4px; overflow-x: auto; }
.nav a { display: block; padding: 10px 12px; color: var(--muted); text-decoration: none; font-weight: 600; border-bottom: 3px solid transparent; white-space: nowrap; }
.nav a:hover { color: var(--text); }
.nav a[aria-current=page] { color: var(--brand); border-bottom-color: var(--brand); }
.topbar form { margin: 0; }
.page-head { display: flex; align-items: flex-start; justify-content: space-between; gap: 12px; flex-wrap: wrap; margin-bottom: 18px; }
.page-head .lead { margin: 0; }
.crumbs { font-size: 14px; margin: 0 0 6px; color: var(--muted); }
.actions { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; }
.actions form { margin: 0; }
.row { display: grid; grid-template-columns: repeat(auto-fit, minmax(160px, 1fr)); gap: 0 16px; }
.row .field:last-child { margin-bottom: 16px; }
form.panel.limit, .limit { max-width: 720px; }
.grid.top { align-items: start; }
/* A grid cell may shrink below its content (key blocks scroll inside it instead of widening the page). */
.grid > * { min-width: 0; }
.hint code, .lead code, dd code { overflow-wrap: anywhere; }
.spaced { margin-top: 20px; }
.spaced > h2 { margin-bottom: 10px; }
.panel h2, .card h2 { margin-bottom: 12px; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 20px; }
.field { margin: 0 0 16px; }
.field:last-child { margin-bottom: 0; }
input[type=text], input[type=password], input[type=number], input[type=date], input[type=url], input[type=search], input[type=file], select, textarea {
  width: 100%; font: inherit; padding: 9px 11px; border: 1px solid #9ca3af; border-radius: 6px; background: #fff; color: var(--text); }
input[type=email] { padding: 9px 11px; }
textarea { min-height: 90px; resize: vertical; }
textarea.mono, .mono { font: 13px/1.45 ui-monospace, Menlo, Consolas, monospace; }
[aria-invalid=true] { border-color: var(--bad) !important; }
.check { display: flex; gap: 10px; align-items: flex-start; font-weight: 400; }
.check input { margin-top: 5px; width: 18px; height: 18px; flex: none; }
.check strong { display: block; }
fieldset { border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin: 0 0 16px; }
legend { font-weight: 700; padding: 0 6px; }
.form-foot { display: flex; gap: 10px; flex-wrap: wrap; align-items: center; margin-top: 20px; }
button.danger, .button.danger { background: #b91c1c; border-color: #b91c1c; }
button.danger:hover, .button.danger:hover { background: #7f1d1d; border-color: #7f1d1d; }
button.small, .button.small { padding: 6px 12px; font-size: 14px; }
.table-wrap { position: relative; overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); }
table { width: 100%; border-collapse: collapse; font-size: 15px; }
th, td { text-align: left; padding: 10px 12px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); background: #f9fafb; white-space: nowrap; }
tr:last-child td { border-bottom: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td .key-text, td code { white-space: nowrap; }
td code, .key-text { font: 14px ui-monospace, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.filters { display: flex; gap: 12px; flex-wrap: wrap; align-items: flex-end; margin-bottom: 16px; }
.filters .field { margin: 0; flex: 1 1 180px; max-width: 320px; }
.filters input, .filters select { height: 42px; }
.filters .field.wide { flex: 3 1 260px; max-width: none; }
.pager { display: flex; justify-content: space-between; align-items: center; gap: 12px; margin-top: 14px; flex-wrap: wrap; }
.empty-state { text-align: center; padding: 40px 24px; }
.empty-state p { color: var(--muted); margin: 0 0 18px; }
.secret { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; background: var(--bg); border-radius: 8px; padding: 12px 14px; margin: 10px 0; }
.secret code, pre.key-block { font: 14px/1.45 ui-monospace, Menlo, Consolas, monospace; overflow-wrap: anywhere; flex: 1 1 auto; margin: 0; }
pre.key-block { background: var(--bg); border-radius: 8px; padding: 12px 14px; white-space: pre; overflow-x: auto; }
dl.facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(160px, 1fr)); gap: 12px; margin: 0; }
dl.facts div { border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; background: var(--card); }
dl.facts dt { font-size: 13px; color: var(--muted); }
dl.facts dd { margin: 2px 0 0; font-weight: 600; overflow-wrap: anywhere; }
.checklist { list-style: none; padding: 0; margin: 0; }
.checklist li { display: flex; gap: 10px; align-items: baseline; padding: 8px 0; border-top: 1px solid var(--line); }
.checklist li:first-child { border-top: 0; }
.checklist .mark { font-weight: 700; width: 1.4em; flex: none; }
.checklist .done .mark { color: var(--ok); }
.chart { width: 100%; height: auto; display: block; }
.chart .bar-a { fill: #1d4ed8; }
.chart .bar-v { fill: #93c5fd; }
.chart text { font: 11px sans-serif; fill: #4b5563; }
.legend { display: flex; gap: 16px; font-size: 14px; color: var(--muted); margin: 8px 0 0; }
.legend span::before { content: ""; display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.legend .a::before { background: #1d4ed8; }
.legend .v::before { background: #93c5fd; }
.product-image { max-width: 240px; max-height: 160px; border-radius: 8px; border: 1px solid var(--line); display: block; margin-bottom: 10px; }
details.more summary { cursor: pointer; color: var(--brand); font-weight: 600; }
svg.qr { width: 200px; height: 200px; display: block; margin: 8px 0; }
ul.codes { columns: 2; list-style: none; padding: 0; }
form.inline { display: inline-flex; gap: 6px; align-items: center; margin: 0 6px 6px 0; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
@media (max-width: 560px) {
  .nav ul { padding: 0 8px; }
  th, td { padding: 8px; }
  .hide-phone { display: none; }
  .topbar .who { display: none; }
  .form-foot button, .form-foot .button { width: 100%; text-align: center; }
}
`;

/**
 * "Select all on this page" ticks the rows' boxes too. Without JavaScript the server adds the page's
 * keys itself when that box is ticked (license-bulk.ts), so the script only shows it.
 */
const SELECT_PAGE_JS = `
(function () {
  var all = document.getElementById('select-page');
  if (!all) return;
  all.addEventListener('change', function () {
    document.querySelectorAll('input[form=bulk][name^="k:"]').forEach(function (box) { box.checked = all.checked; });
  });
})();
`;

/**
 * A confirmation's button sends once: a double click would otherwise post twice (a bulk extend would
 * extend twice). The form's own navigation replaces the page; without JavaScript the browser's own
 * "resubmit?" warning is the guard.
 */
const SUBMIT_ONCE_JS = `
(function () {
  var forms = document.querySelectorAll('form[data-once]');
  var buttons = function (form, off) { form.querySelectorAll('button[type=submit]').forEach(function (b) { b.disabled = off; }); };
  forms.forEach(function (form) {
    form.addEventListener('submit', function (event) {
      if (form.dataset.sent) { event.preventDefault(); return; }
      form.dataset.sent = 'yes';
      setTimeout(function () { buttons(form, true); }, 0); // after the browser has taken the form's data
    });
  });
  // Back to this page from the browser's cache: the form may be sent again on purpose.
  window.addEventListener('pageshow', function () { forms.forEach(function (form) { delete form.dataset.sent; buttons(form, false); }); });
})();
`;

/** Copy buttons (the web kit's script), the list's select-all and the confirmations' single send. The chart is plain SVG rendered on the server: no script needed. */
export const DASHBOARD_JS = COPY_JS + SELECT_PAGE_JS + SUBMIT_ONCE_JS;
