/**
 * The dashboard page and its two asset files, with the headers that keep the page to itself: a
 * content security policy allowing only this server's own script, styles and connections (no
 * inline script, no CDN, nothing else to load), no framing, no referrer, and no caching of pages
 * or API answers.
 */
import { createHash } from "node:crypto";
import { embeddedDashboard, type DashboardBundle } from "./embedded-assets";

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

type HeaderBag = { headers: Record<string, unknown> };

/** Every dashboard response: API answers and pages alike. */
export function dashboardHeaders(set: HeaderBag): void {
  set.headers["cache-control"] = "no-store";
  set.headers["x-content-type-options"] = "nosniff";
  set.headers["referrer-policy"] = "no-referrer";
  set.headers["x-frame-options"] = "DENY";
  set.headers["content-security-policy"] = CONTENT_SECURITY_POLICY;
  set.headers["cross-origin-opener-policy"] = "same-origin";
  set.headers["cross-origin-resource-policy"] = "same-origin";
}

export interface ServedAssets {
  js: string;
  css: string;
  /** A short content hash, for cache-busting the asset URLs and for ETags. */
  version: string;
}

let loading: Promise<ServedAssets> | null = null;

/** The embedded bundle, or (from source) one built on first use and kept. */
export function dashboardAssets(): Promise<ServedAssets> {
  if (!loading) {
    loading = (async () => {
      const bundle: DashboardBundle = embeddedDashboard ?? (await (await import("./bundle")).bundleDashboard());
      return { ...bundle, version: createHash("sha256").update(bundle.js).update(bundle.css).digest("hex").slice(0, 12) };
    })();
    // A failed bundle is not kept: the next request tries again (and logs why).
    loading.catch(() => (loading = null));
  }
  return loading;
}

export function pageHtml(version: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchyard dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/assets/app.css?v=${version}">
</head>
<body>
<div id="app"><noscript>The dashboard needs JavaScript.</noscript></div>
<script type="module" src="/dashboard/assets/app.js?v=${version}"></script>
</body>
</html>
`;
}
