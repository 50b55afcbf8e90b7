/**
 * The dashboard's built front end inside the executable. From source this is null and
 * assets.ts bundles src/dashboard/client on first use; build.ts replaces this module with the
 * bundle it made at build time, so the binary serves it with no Bun.build and no files around.
 */
export interface DashboardBundle {
  js: string;
  css: string;
}

export const embeddedDashboard: DashboardBundle | null = null;
