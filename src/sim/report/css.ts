/**
 * The report's stylesheet: light only, system fonts, and print rules that keep each figure and
 * panel on one page.
 *
 * @module
 * @internal
 */

/** @internal The `<style>` content of the report. */
export const REPORT_CSS = [
  ':root{color-scheme:light}',
  '*{box-sizing:border-box}',
  'body{margin:0 auto;max-width:1140px;padding:24px 32px 40px;background:#fff;color:#1f2328;' +
    "font:14px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif}",
  'h1{font-size:24px;line-height:1.25;margin:0 0 4px}',
  'h2{font-size:17px;margin:28px 0 10px;padding-bottom:4px;border-bottom:1px solid #d0d7de}',
  'p{margin:0 0 8px}',
  '.meta,.note,figcaption,.params{color:#57606a;font-size:12.5px}',
  'code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f3f4f6;' +
    'padding:0 3px;border-radius:3px}',
  '.empty{padding:12px 16px;border:1px dashed #8c959f;border-radius:6px;color:#57606a}',
  '.table-wrap{overflow-x:auto}',
  'table{border-collapse:collapse;width:100%;font-size:13px;font-variant-numeric:tabular-nums}',
  'th,td{padding:5px 8px;text-align:right;white-space:nowrap;border-bottom:1px solid #e3e6ea}',
  'thead th{vertical-align:bottom;white-space:normal;border-bottom:2px solid #8c959f;' +
    'font-weight:600}',
  'th:first-child{text-align:left}',
  'tbody th{font-weight:500;white-space:normal;overflow-wrap:anywhere;min-width:13em;max-width:18em}',
  'tbody tr:nth-child(even){background:#f6f8fa}',
  '.best strong{font-weight:700}',
  'figure{margin:0 0 8px}',
  'figcaption{margin-top:6px}',
  'figure>svg.chart+.multiples{margin-top:8px}',
  'svg.chart{display:block;max-width:100%;height:auto}',
  '.multiples{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(340px,100%),1fr));' +
    'gap:10px 14px}',
  '.narrow{display:none}',
  '.legend{display:flex;flex-wrap:wrap;gap:2px 16px;list-style:none;margin:0 0 6px;padding:0;' +
    'font-size:12.5px}',
  '.legend li{display:flex;align-items:center;gap:6px}',
  '.swatch{flex:none}',
  'tbody.oracle th,tbody.oracle td{border-top:2px solid #8c959f;background:#fff;font-style:italic}',
  '.tag{font-size:12px;color:#57606a;font-style:normal;white-space:nowrap}',
  'dl.run{grid-template-columns:max-content minmax(0,1fr)}',
  'code.command{display:block;white-space:pre-wrap;overflow-wrap:anywhere;padding:4px 6px}',
  'table.settings{width:auto;margin-top:4px;font-size:13px}',
  'table.settings th,table.settings td{padding:2px 10px 2px 0;text-align:left;min-width:0;' +
    'border-bottom:1px solid #eef0f2}',
  '@media (max-width:640px){body{padding:16px 12px 32px}.wide{display:none}.narrow{display:block}' +
    'tbody th{min-width:9em}dl.run{grid-template-columns:1fr}}',
  'footer{margin-top:32px}',
  'dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0;font-size:13px}',
  'dt{font-weight:600}',
  'dd{margin:0;color:#424a53}',
  '@page{margin:14mm}',
  '@media print{body{max-width:none;padding:0;font-size:10.5pt}' +
    'svg.chart,tr,dl{break-inside:avoid}h2{break-after:avoid}' +
    'tbody tr:nth-child(even){background:none}.table-wrap{overflow:visible}' +
    '.wide{display:block}.narrow{display:none}}',
].join('\n');
