/**
 * The order in which a request tries its routes: a weighted random permutation (weighted
 * sampling without replacement), so traffic splits by weight and every route is still a fallback
 * for the others. Routes of weight 0 are standbys: tried only after all weighted ones, in file
 * order. Pure given `random`.
 */
export function weightedOrder<T extends { weight: number }>(items: readonly T[], random: () => number = Math.random): T[] {
  const weighted = items.filter((r) => r.weight > 0);
  const standby = items.filter((r) => !(r.weight > 0));
  const out: T[] = [];
  let total = weighted.reduce((n, r) => n + r.weight, 0);
  while (weighted.length > 0) {
    let x = random() * total;
    let i = 0;
    while (i < weighted.length - 1 && x >= weighted[i]!.weight) {
      x -= weighted[i]!.weight;
      i++;
    }
    const [picked] = weighted.splice(i, 1);
    total -= picked!.weight;
    out.push(picked!);
  }
  return out.concat(standby);
}

/**
 * Candidate order for a tier. Priority requests try priority routes first, then standard routes
 * (which get the priority hint); standard requests use standard routes, or priority routes when
 * a model has nothing else. `hinted` says which candidates must carry the priority hint.
 */
export function planRoutes<T extends { weight: number; priority: boolean }>(
  routes: readonly T[],
  tier: "default" | "priority",
  random: () => number = Math.random,
): { route: T; hinted: boolean }[] {
  const prio = weightedOrder(routes.filter((r) => r.priority), random);
  const std = weightedOrder(routes.filter((r) => !r.priority), random);
  if (tier === "priority") return [...prio.map((route) => ({ route, hinted: false })), ...std.map((route) => ({ route, hinted: true }))];
  const pool = std.length > 0 ? std : prio;
  return pool.map((route) => ({ route, hinted: false }));
}
