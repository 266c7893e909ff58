/**
 * The simulator's HTML report.
 *
 * @module
 */
export type { HtmlReportOptions } from './html-report.js';
export { renderHtmlReport } from './html-report.js';
