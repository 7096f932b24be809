import type { ReactElement } from "react";
import { Connections } from "./connections";
import { ConnectionPage } from "./connections-detail";
import { Notifications } from "./notifications";
import { Outbound } from "./outbound";
import { SchemaPage, Schemas } from "./schemas";
import { WebhookPage, Webhooks } from "./webhooks";

/** The setup pages (connections, schemas, webhooks, notifications, outbound) by path; null for any other path. */
export function setupPage(path: string): ReactElement | null {
  const [, section, id, rest] = /^\/setup\/([a-z]+)(?:\/([^/]+))?(\/.*)?$/.exec(path) ?? [];
  if (!section || rest) return null;
  const one = id === undefined ? undefined : decodeURIComponent(id);
  switch (section) {
    case "connections":
      return one === undefined ? <Connections /> : <ConnectionPage key={one} id={one} />;
    case "schemas":
      return one === undefined ? <Schemas /> : <SchemaPage key={one} id={one} />;
    case "webhooks":
      return one === undefined ? <Webhooks /> : <WebhookPage key={one} id={one} />;
    case "notifications":
      return one === undefined ? <Notifications /> : null;
    case "outbound":
      return one === undefined ? <Outbound /> : null;
    default:
      return null;
  }
}
