/**
 * A uPlot chart as a Preact component: created once on mount, given new data on update, resized
 * with its container (so it fits a 360 px phone as well as a desktop), destroyed on unmount.
 */
import { html } from "htm/preact";
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";

export interface ChartSeries {
  label: string;
  color: string;
  /** Draw as bars instead of a line. */
  bars?: boolean;
  format?: (v: number) => string;
}

export interface ChartProps {
  title: string;
  /** x values: seconds since the epoch. */
  x: number[];
  series: { spec: ChartSeries; values: (number | null)[] }[];
  height?: number;
  id?: string;
  /** x-axis ticks as days (no time of day). */
  daily?: boolean;
  /** A fixed x range in epoch seconds (default: the data's). */
  xRange?: [number, number];
  /** y-axis tick labels. */
  yTick?: (v: number) => string;
}

const HEIGHT = 190;
const barsPath = uPlot.paths.bars!({ size: [0.7, 40] });

export function Chart(props: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  // The scale callbacks read the latest props (a moving "last hour" window), not the first ones.
  const latest = useRef(props);
  latest.current = props;
  const shape = props.series.map((s) => `${s.spec.label}:${s.spec.bars ? 1 : 0}`).join("|");

  useEffect(() => {
    const el = box.current!;
    const opts: uPlot.Options = {
      width: Math.max(240, el.clientWidth),
      height: props.height ?? HEIGHT,
      legend: { show: true },
      // Times are UTC everywhere in the dashboard, whatever the browser's zone.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: true, range: (_u, min, max) => rangeOf(latest.current, min, max) },
        // Counts and money start at zero; an empty chart still shows a sensible axis.
        y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: [
        { stroke: "#555", grid: { stroke: "#eee" }, ...(props.daily ? { values: (_u: uPlot, ticks: number[]) => ticks.map((t) => new Date(t * 1000).toISOString().slice(5, 10)) } : {}) },
        { stroke: "#555", grid: { stroke: "#eee" }, size: 70, ...(props.yTick ? { values: (_u: uPlot, ticks: number[]) => ticks.map(props.yTick!) } : {}) },
      ],
      series: [
        { label: props.daily ? "day" : "time", value: (_u, v) => (v == null ? "—" : new Date(v * 1000).toISOString().slice(props.daily ? 0 : 11, props.daily ? 10 : 19)) },
        ...props.series.map(({ spec }) => ({
          label: spec.label,
          stroke: spec.color,
          fill: spec.bars ? spec.color + "99" : undefined,
          width: spec.bars ? 0 : 2,
          paths: spec.bars ? barsPath : undefined,
          points: { show: !spec.bars && props.x.length < 40 },
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => (v == null ? "—" : spec.format ? spec.format(v) : String(v)),
        })),
      ],
    };
    plot.current = new uPlot(opts, data(props), el);
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(240, el.clientWidth), height: props.height ?? HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(data(props));
  }, [props.x, props.series]);

  return html`<figure class="chart" id=${props.id}>
    <figcaption>${props.title}</figcaption>
    <div ref=${box} class="chart-box"></div>
  </figure>`;
}

/** The x range: fixed when given; daily bars get half a day each side so the first and last show whole. */
function rangeOf(p: ChartProps, min: number, max: number): [number, number] {
  if (p.xRange) return p.xRange;
  return p.daily ? [min - 43_200, max + 43_200] : [min, max];
}

function data(p: ChartProps): uPlot.AlignedData {
  return [p.x, ...p.series.map((s) => s.values)] as uPlot.AlignedData;
}
