/**
 * Event-loop turns (setImmediate callbacks, each scheduled by the one before) that ran while
 * `work` was in flight: ordering, not timing. Work done off the loop lets them keep coming until
 * it settles; work run on the loop leaves no turn for them during it.
 */
export async function loopTurnsWhile<T>(work: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let settled = false;
  let turns = 0;
  const spin = () => {
    if (settled) return;
    turns++;
    setImmediate(spin);
  };
  setImmediate(spin);
  try {
    return { value: await work(), turns };
  } finally {
    settled = true;
  }
}
