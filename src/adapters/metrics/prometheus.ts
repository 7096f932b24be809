import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Door, LoginMethod, Metrics, QueueDepth, Surface } from "./port";

/**
 * One registry per service: tests build many services in one process, and
 * prom-client's global registry would refuse the second set of metrics.
 */
export function createPrometheusMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const http = new HttpRequestStats();
  registry.registerMetric(http.counter() as never);
  registry.registerMetric(http.histogram() as never);
  const runsStarted = new Counter({ name: "fps_runs_started_total", help: "Pipeline runs created, by direction", labelNames: ["direction"], registers });
  const runsFinished = new Counter({ name: "fps_runs_finished_total", help: "Pipeline runs that reached an end status while processing, by status and direction", labelNames: ["status", "direction"], registers });
  const runDuration = new Histogram({
    name: "fps_run_duration_seconds",
    help: "From a run's processing job start to its end status, by direction",
    labelNames: ["direction"],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
    registers,
  });
  const rows = new Counter({ name: "fps_rows_processed_total", help: "Data rows processed by finished runs, by outcome", labelNames: ["outcome"], registers });
  const bytes = new Counter({ name: "fps_bytes_received_total", help: "File bytes received, by door", labelNames: ["door"], registers });
  const webhooks = new Counter({ name: "fps_webhook_delivery_attempts_total", help: "Webhook delivery attempts, by outcome", labelNames: ["outcome"], registers });
  const notifications = new Counter({ name: "fps_notification_sends_total", help: "Notification sends, by channel and outcome", labelNames: ["channel", "outcome"], registers });
  const sftpLogins = new Counter({ name: "fps_sftp_logins_total", help: "Hosted SFTP login attempts, by method and outcome", labelNames: ["method", "outcome"], registers });
  const sftpSessions = new Gauge({ name: "fps_sftp_sessions_open", help: "Hosted SFTP connections logged in now", registers });
  const smtp = new Counter({ name: "fps_smtp_messages_total", help: "Inbound e-mail messages, by outcome", labelNames: ["outcome"], registers });

  let readDepth: (() => Promise<QueueDepth[]>) | null = null;
  // Both gauges from one query a scrape (prom-client collects them together); kinds once seen stay, at 0, rather than vanish.
  let queueRead: Promise<QueueDepth[]> | null = null;
  const kinds = new Set<string>();
  async function readQueue(gauge: Gauge, pick: (d: QueueDepth) => number) {
    if (!readDepth) return;
    queueRead ??= readDepth().finally(() => (queueRead = null));
    const list = await queueRead;
    for (const d of list) kinds.add(d.kind);
    for (const k of kinds) gauge.set({ kind: k }, pick(list.find((d) => d.kind === k) ?? { kind: k, waiting: 0, oldestAgeSeconds: 0 }));
  }
  new Gauge({
    name: "fps_jobs_waiting",
    help: "Jobs due and waiting for a worker, by job kind",
    labelNames: ["kind"],
    registers,
    collect() {
      return readQueue(this, (d) => d.waiting);
    },
  });
  new Gauge({
    name: "fps_jobs_oldest_waiting_age_seconds",
    help: "How long the oldest due job has waited for a worker, by job kind",
    labelNames: ["kind"],
    registers,
    collect() {
      return readQueue(this, (d) => d.oldestAgeSeconds);
    },
  });

  return {
    httpRequest: (surface, route, method, status, seconds) => http.observe(surface, route, method, status, seconds),
    runStarted: (direction) => runsStarted.inc({ direction }),
    runFinished(status, direction, seconds) {
      runsFinished.inc({ status, direction });
      runDuration.observe({ direction }, seconds);
    },
    rowsProcessed(c) {
      if (c.valid > 0) rows.inc({ outcome: "valid" }, c.valid);
      if (c.skipped > 0) rows.inc({ outcome: "skipped" }, c.skipped);
      if (c.quarantined > 0) rows.inc({ outcome: "quarantined" }, c.quarantined);
    },
    bytesReceived: (door: Door, n: number) => {
      if (n > 0) bytes.inc({ door }, n);
    },
    webhookAttempt: (outcome) => webhooks.inc({ outcome }),
    notificationSend: (channel, outcome) => notifications.inc({ channel, outcome }),
    sftpLogin: (method: LoginMethod, outcome) => sftpLogins.inc({ method, outcome }),
    sftpSessionOpened: () => sftpSessions.inc(),
    sftpSessionClosed: () => sftpSessions.dec(),
    smtpMessage: (outcome) => smtp.inc({ outcome }),
    setQueueDepth(read) {
      readDepth = read;
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface HttpSeries {
  labels: { surface: Surface; route: string; method: string };
  byStatus: Map<number, number>;
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative: summed up on a scrape). */
  buckets: Float64Array;
}

/**
 * HTTP requests, counted on every request at the cost of a map lookup and
 * a few additions (prom-client's own label hashing, about a microsecond an
 * observation, was a tenth of the fastest route's time). Exposed through
 * prom-client's registry as a counter and a histogram in its own value
 * format, so the text is written by the library like every other family.
 */
class HttpRequestStats {
  /** By route template, then surface and method: the route is the same string on every request, so no key is built to find a series. */
  private readonly byRoute = new Map<string, HttpSeries[]>();

  private *allSeries(): Iterable<HttpSeries> {
    for (const list of this.byRoute.values()) yield* list;
  }

  observe(surface: Surface, route: string, method: string, status: number, seconds: number): void {
    let list = this.byRoute.get(route);
    if (!list) this.byRoute.set(route, (list = []));
    let s: HttpSeries | undefined;
    for (let i = 0; i < list.length; i++) {
      const l = list[i]!.labels;
      if (l.method === method && l.surface === surface) {
        s = list[i];
        break;
      }
    }
    if (!s) {
      s = { labels: { surface, route, method }, byStatus: new Map(), count: 0, sum: 0, buckets: new Float64Array(HTTP_BUCKETS.length) };
      list.push(s);
    }
    s.byStatus.set(status, (s.byStatus.get(status) ?? 0) + 1);
    s.count++;
    s.sum += seconds;
    for (let i = 0; i < HTTP_BUCKETS.length; i++) {
      if (seconds <= HTTP_BUCKETS[i]!) {
        s.buckets[i]!++;
        break;
      }
    }
  }

  counter() {
    return {
      name: "fps_http_requests_total",
      help: "HTTP requests answered, by surface, route template, method and status",
      type: "counter",
      get: () => ({
        name: "fps_http_requests_total",
        help: "HTTP requests answered, by surface, route template, method and status",
        type: "counter",
        values: [...this.allSeries()].flatMap((s) => [...s.byStatus].map(([status, value]) => ({ labels: { ...s.labels, status }, value }))),
      }),
    };
  }

  histogram() {
    const name = "fps_http_request_duration_seconds";
    const help = "Time to answer an HTTP request (until the reply starts), by surface, route template and method";
    return {
      name,
      help,
      type: "histogram",
      get: () => ({
        name,
        help,
        type: "histogram",
        values: [...this.allSeries()].flatMap((s) => {
          let cumulative = 0;
          const buckets = HTTP_BUCKETS.map((le, i) => {
            cumulative += s.buckets[i]!;
            return { metricName: `${name}_bucket`, labels: { ...s.labels, le }, value: cumulative };
          });
          return [
            ...buckets,
            { metricName: `${name}_bucket`, labels: { ...s.labels, le: "+Inf" }, value: s.count },
            { metricName: `${name}_sum`, labels: s.labels, value: s.sum },
            { metricName: `${name}_count`, labels: s.labels, value: s.count },
          ];
        }),
      }),
    };
  }
}
