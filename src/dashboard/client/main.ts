/**
 * The dashboard page: one Preact app, styles bundled with it (no CDN, works offline).
 *
 * Libraries, all bundled by Bun.build into one file: Preact (about 10 KB, React's component model)
 * with htm (tagged templates, so no JSX compiler settings and no build step beyond bundling), and
 * uPlot (about 50 KB, fast canvas time series; its CSS is imported below) for every chart.
 */
// First: uPlot constructs Intl formats from navigator.language as it loads (see intl-guard.ts).
import "./intl-guard-install";
import "uplot/dist/uPlot.min.css";
import "./styles.css";
import { html } from "htm/preact";
import { render } from "preact";
import { App } from "./app";

render(html`<${App} />`, document.getElementById("app")!);
