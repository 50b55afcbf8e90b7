/** The dashboard page: one Preact app, styles bundled with it (no CDN, works offline). */
import "uplot/dist/uPlot.min.css";
import "./styles.css";
import { html } from "htm/preact";
import { render } from "preact";
import { App } from "./app";

render(html`<${App} />`, document.getElementById("app")!);
