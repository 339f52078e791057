/**
 * What every server-rendered page set shares (served by each from its own assets path; CSP: 'self'
 * only): the base stylesheet (type, header, panels, forms, buttons, notices, badges) and the copy
 * buttons' script. Each set adds its own rules after the base.
 */
export const BASE_CSS = `
:root { color-scheme: light; --text: #111827; --muted: #4b5563; --line: #e5e7eb; --bg: #f3f4f6; --card: #ffffff;
  --brand: #1d4ed8; --brand-dark: #1e3a8a; --ok: #166534; --ok-bg: #dcfce7; --warn: #92400e; --warn-bg: #fef3c7;
  --bad: #991b1b; --bad-bg: #fee2e2; --radius: 10px; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--text); font: 16px/1.55 -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; }
a { color: var(--brand); }
a:hover { color: var(--brand-dark); }
:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
.skip { position: absolute; left: -9999px; top: 0; background: var(--card); padding: 8px 12px; }
.skip:focus { left: 8px; top: 8px; z-index: 10; }
.topbar { background: var(--card); border-bottom: 1px solid var(--line); }
.topbar-inner { max-width: 920px; margin: 0 auto; padding: 12px 20px; display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
.brand { font-weight: 700; font-size: 18px; color: var(--text); text-decoration: none; margin-right: auto; }
.who { color: var(--muted); font-size: 14px; overflow-wrap: anywhere; }
main { max-width: 920px; margin: 0 auto; padding: 24px 20px 48px; }
main.narrow { max-width: 480px; padding-top: 48px; }
h1 { font-size: 26px; line-height: 1.25; margin: 0 0 8px; }
h2 { font-size: 20px; line-height: 1.3; margin: 0; }
h3 { font-size: 15px; margin: 18px 0 6px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.lead { color: var(--muted); margin: 0 0 24px; }
.panel, .card { background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); padding: 24px; }
.card { margin: 0 0 20px; }
.card-head { display: flex; align-items: center; justify-content: space-between; gap: 12px; flex-wrap: wrap; margin-bottom: 14px; }
label { display: block; font-weight: 600; margin: 0 0 6px; }
input[type=email] { width: 100%; font: inherit; padding: 11px 12px; border: 1px solid #9ca3af; border-radius: 6px; background: #fff; color: var(--text); }
input[type=email]:focus { border-color: var(--brand); }
.hint { color: var(--muted); font-size: 14px; margin: 8px 0 0; }
.hint.error-text { color: var(--bad); font-weight: 600; }
.button, button { display: inline-block; font: inherit; font-weight: 600; border-radius: 6px; padding: 10px 18px; border: 1px solid var(--brand);
  background: var(--brand); color: #fff; cursor: pointer; text-decoration: none; line-height: 1.4; }
.button:hover, button:hover { background: var(--brand-dark); border-color: var(--brand-dark); color: #fff; }
button.secondary, .button.secondary { background: #fff; color: var(--brand); }
button.secondary:hover { background: #eff6ff; color: var(--brand-dark); }
button.link { background: none; border: 0; padding: 0; color: var(--brand); font-weight: 400; text-decoration: underline; }
form.stack button { margin-top: 16px; width: 100%; }
.notice { border-radius: 8px; padding: 12px 16px; margin: 0 0 20px; border: 1px solid; }
.notice.ok { background: var(--ok-bg); color: var(--ok); border-color: #86efac; }
.notice.warn { background: var(--warn-bg); color: var(--warn); border-color: #fcd34d; }
.notice.bad { background: var(--bad-bg); color: var(--bad); border-color: #fca5a5; }
.badge { display: inline-block; font-size: 13px; font-weight: 700; padding: 3px 10px; border-radius: 999px; }
.badge.active { background: var(--ok-bg); color: var(--ok); }
.badge.fallbacked, .badge.expired { background: var(--warn-bg); color: var(--warn); }
.badge.revoked { background: var(--bad-bg); color: var(--bad); }
footer { text-align: center; color: var(--muted); font-size: 13px; padding: 0 20px 32px; }
@media (max-width: 560px) {
  main { padding: 16px 12px 40px; }
  main.narrow { padding-top: 24px; }
  .panel, .card { padding: 18px 16px; }
  h1 { font-size: 22px; }
}
`;

/**
 * Progressive enhancement: without JavaScript the text stays plain and selectable and the copy
 * buttons stay hidden. A button copies its `data-copy` value, or the text of the element named by
 * `data-copy-target`, and says so in #copy-status (its `data-copied` text, if any).
 */
export const COPY_JS = `
(function () {
  if (!navigator.clipboard) return;
  document.querySelectorAll('button[data-copy], button[data-copy-target]').forEach(function (button) {
    button.hidden = false;
    button.addEventListener('click', function () {
      var target = button.getAttribute('data-copy-target');
      var text = target ? document.getElementById(target).textContent : button.getAttribute('data-copy');
      navigator.clipboard.writeText(text).then(function () {
        var label = button.textContent;
        button.textContent = 'Copied';
        var status = document.getElementById('copy-status');
        if (status) status.textContent = button.getAttribute('data-copied') || 'Copied to the clipboard.';
        setTimeout(function () { button.textContent = label; }, 2000);
      });
    });
  });
})();
`;
