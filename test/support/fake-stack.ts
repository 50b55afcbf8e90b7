/** The setups most end-to-end tests share: a harness over a fresh fake upstream with one funded account (plus, for SDK tests, one over a scripted upstream). */
import { startHarness, type Harness } from "./harness";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream";
import { startScriptedUpstream, type ScriptedUpstream } from "./scripted-upstream";
import type { TestStore } from "./stores";

export interface FakeStack {
  fake: FakeUpstream;
  h: Harness;
  acct: { id: string; key: string };
}

export async function startFakeStack(dollars = 10, store: TestStore = "sqlite"): Promise<FakeStack> {
  const fake = startFakeUpstream();
  const h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url }, {}, store);
  const acct = await h.account(dollars);
  return { fake, h, acct };
}

export async function stopFakeStack(h: Harness, fake: FakeUpstream): Promise<void> {
  await h.stop();
  fake.stop();
}

/** For SDK tests that also need shapes only the scripted upstream makes: `hs` serves from `scripted`. */
export interface DualStack extends FakeStack {
  scripted: ScriptedUpstream;
  hs: Harness;
}

export async function startDualStack(store: TestStore = "sqlite"): Promise<DualStack> {
  const fake = startFakeUpstream();
  const scripted = startScriptedUpstream();
  const [h, hs] = await Promise.all([startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url }, {}, store), startHarness({ SWITCHYARD_UPSTREAM_URL: scripted.url }, {}, store)]);
  const acct = await h.account(10);
  return { fake, scripted, h, hs, acct };
}

export async function stopDualStack(s: Omit<DualStack, "acct">): Promise<void> {
  await Promise.all([s.h.stop(), s.hs.stop()]);
  s.fake.stop();
  s.scripted.stop();
}

/** Back to the default fake behaviour, with no recorded requests on either upstream. */
export function resetDualStack(fake: FakeUpstream, scripted: ScriptedUpstream): void {
  fake.behave({});
  fake.requests.length = 0;
  scripted.requests.length = 0;
}
