/** Imported first by main.ts, before uPlot loads: see intl-guard.ts. */
import { guardIntl } from "./intl-guard";

guardIntl();
