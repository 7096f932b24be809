import type { ServiceContext } from "../services/context";
import type { CronSpec, JobDefinition } from "./port";

/** Every job the service runs, with the services it calls. (Filled by the runs work: process-run, ...) */
export function jobDefinitions(_svc: ServiceContext): { definitions: JobDefinition<any>[]; crons: CronSpec[] } {
  return { definitions: [], crons: [] };
}
