/**
 * The layout checks of browser.test.ts, run inside the page: one function of
 * `minChartFontPx` (chart text must be drawn at least that large once the SVG is scaled to its
 * box) returning `{ overflow, smallText, charts, visibleCharts }`, each list one sentence per
 * problem found. Plain JavaScript, since it runs in the browser and the project's types have no
 * DOM; the test reads this file as text and evaluates it in the page.
 */
// biome-ignore lint/correctness/noUnusedVariables: evaluated in the page by browser.test.ts
function inspect(minChartFontPx) {
  const overflow = [];
  const smallText = [];
  const charts = [];
  const width = document.documentElement.clientWidth;
  const describe = (e) =>
    `${e.tagName.toLowerCase()}${e.id === '' ? '' : `#${e.id}`}${
      e.getAttribute('class') === null ? '' : `.${e.getAttribute('class')}`
    } "${(e.textContent ?? '').trim().slice(0, 40)}"`;
  const visible = (e) => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden';
  };
  const scrolls = (e) => {
    for (let a = e.parentElement; a !== null && a !== document.body; a = a.parentElement) {
      const x = getComputedStyle(a).overflowX;
      if (x === 'auto' || x === 'scroll') return true;
    }
    return false;
  };

  if (document.documentElement.scrollWidth > width) {
    overflow.push(`the page is ${document.documentElement.scrollWidth} px wide in ${width} px`);
  }
  for (const e of Array.from(document.body.querySelectorAll('*'))) {
    if (!visible(e) || (e.closest('svg') !== null && e.tagName.toLowerCase() !== 'svg')) continue;
    const r = e.getBoundingClientRect();
    if ((r.right > width + 0.5 || r.left < -0.5) && !scrolls(e)) {
      overflow.push(`${describe(e)} spans ${Math.round(r.left)} … ${Math.round(r.right)} px`);
    }
    if (e.closest('svg') !== null) continue;
    const own = Array.from(e.childNodes).some(
      (n) => n.nodeType === Node.TEXT_NODE && (n.textContent ?? '').trim() !== '',
    );
    const size = Number.parseFloat(getComputedStyle(e).fontSize);
    if (own && size < 12) smallText.push(`${describe(e)} at ${size} px`);
  }

  let visibleCharts = 0;
  for (const svg of Array.from(document.querySelectorAll('svg.chart'))) {
    if (!visible(svg)) continue;
    const kind = svg.dataset.chart;
    if (kind === 'legend') continue;
    visibleCharts++;
    const name = svg.getAttribute('aria-label') ?? '?';
    const box = svg.viewBox.baseVal;
    const scale = svg.getBoundingClientRect().width / box.width;
    const texts = Array.from(svg.querySelectorAll('text'));
    for (const t of texts) {
      const px = Number.parseFloat(getComputedStyle(t).fontSize) * scale;
      if (px < minChartFontPx) {
        smallText.push(`chart "${name}": "${t.textContent}" drawn at ${px.toFixed(1)} px`);
        break;
      }
    }
    for (const t of texts) {
      const b = t.getBBox();
      if (
        b.x < -0.5 ||
        b.y < -0.5 ||
        b.x + b.width > box.width + 0.5 ||
        b.y + b.height > box.height + 0.5
      ) {
        charts.push(`chart "${name}": "${t.textContent}" is cut off at the chart's edge`);
      }
    }
    const ticks = svg.querySelectorAll('text.tick');
    if (ticks.length < 2) charts.push(`chart "${name}" has ${ticks.length} tick labels`);
    const series = (svg.dataset.series ?? '').split('\n').filter((s) => s !== '');
    const legendScope = svg.closest('figure') ?? svg;
    const legendLabels = new Set(
      Array.from(legendScope.querySelectorAll('.legend-label')).map((t) =>
        (t.textContent ?? '').trim(),
      ),
    );
    for (const s of series) {
      if (!legendLabels.has(s)) charts.push(`chart "${name}": no legend entry for "${s}"`);
    }
    for (const path of Array.from(svg.querySelectorAll('path'))) {
      const d = path.getAttribute('d') ?? '';
      if (d.trim() === '' || !/\d/.test(d)) charts.push(`chart "${name}": an empty path`);
    }
    if (
      kind === 'lines' &&
      svg.querySelectorAll('path').length === 0 &&
      texts.every((t) => t.textContent !== 'no samples')
    ) {
      charts.push(`chart "${name}" draws no line`);
    }
  }
  return { overflow, smallText, charts, visibleCharts };
}
