/**
 * Every route module, in the order the app registers them (the order of /docs, the OpenAPI
 * document and the root document's endpoints). Each module declares the services it uses; the
 * app hands each the one service object, seen through that declaration. A module that can be
 * switched off (the dashboard) decides that itself.
 */
import type { RouteModule } from "../route-module";
import { registerRootRoutes } from "./root";
import { registerReadinessRoutes, type ReadinessDeps } from "./readiness";
import { registerDocsRoutes } from "./docs";
import { registerModelRoutes } from "./models";
import { registerAdminRoutes, type AdminRouteDeps } from "./admin";
import { registerAdminCatalogRoutes, type AdminCatalogRouteDeps } from "./admin-catalog";
import { registerChatRoutes } from "./chat";
import { registerMessagesRoutes, type MessagesRouteDeps } from "./messages";
import { registerResponsesRoutes, type ResponsesRouteDeps } from "./responses";
import { registerSpeechRoutes, type SpeechRouteDeps } from "./speech";
import { registerEmbeddingsRoutes, type EmbeddingsRouteDeps } from "./embeddings";
import { registerUsageRoutes, type UsageRouteDeps } from "./usage";
import { registerSelfServiceRoutes, type SelfServiceDeps } from "./self-service";
import { registerDashboardRoutes, type DashboardDeps } from "../dashboard/routes";
import { registerMetricsRoutes, type MetricsRouteDeps } from "./metrics";

/** What all the routes use together (the chat routes' needs are within Messages' and Responses'). */
export type RouteDeps = ReadinessDeps & AdminRouteDeps & AdminCatalogRouteDeps & MessagesRouteDeps & ResponsesRouteDeps & SpeechRouteDeps
  & EmbeddingsRouteDeps & UsageRouteDeps & SelfServiceDeps & DashboardDeps & MetricsRouteDeps;

export const ROUTE_MODULES: readonly RouteModule<RouteDeps>[] = [
  registerRootRoutes,
  registerReadinessRoutes,
  registerDocsRoutes,
  registerModelRoutes,
  registerAdminRoutes,
  registerAdminCatalogRoutes,
  registerChatRoutes,
  registerMessagesRoutes,
  registerResponsesRoutes,
  registerSpeechRoutes,
  registerEmbeddingsRoutes,
  registerUsageRoutes,
  registerSelfServiceRoutes,
  registerDashboardRoutes,
  registerMetricsRoutes,
];
