/**
 * The fake upstream as its own process, for benchmarks: it must not share an event loop with the
 * gateway or the load generator. Prints `{"url": ...}` as its first stdout line, then serves until
 * killed. Behaviour comes from the FAKE_UPSTREAM_BEHAVIOUR environment variable (JSON).
 */
import { startFakeUpstream, type Behaviour } from "./fake-upstream";
import { serveUntilKilled } from "./serve-until-killed";

const behaviour = JSON.parse(process.env.FAKE_UPSTREAM_BEHAVIOUR ?? "{}") as Behaviour;
const fake = startFakeUpstream(behaviour, { recordRequests: false });
serveUntilKilled(fake.url, () => fake.stop());
