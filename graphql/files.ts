import * as delta from "../src/services/delta";
import * as files from "../src/services/files";
import { defined } from "./args";
import { builder } from "./builder";
import { inputType, outputType } from "./from-zod";

/** Files of runs (links, row search) and the delta between two runs. */

const RunFileKind = builder.enumType("RunFileKind", {
  description: "Which file of a run: the one received, the processed one, or the rejects (rows skipped or quarantined, with their input row and errors).",
  values: files.RUN_FILE_KINDS,
});

builder.queryFields((t) => ({
  runFileLink: t.field({
    nullable: true,
    type: outputType(files.FileLink),
    description: "A presigned GET link to a run's original, processed or rejects file, usable without the key until it expires.",
    args: { id: t.arg.id({ required: true, description: "The run." }), which: t.arg({ type: RunFileKind, required: true }) },
    resolve: (_, { id, which }, { svc, actor }) => files.getRunFileLink(svc, { actor, runId: String(id), which }),
  }),
  searchFiles: t.field({
    nullable: true,
    type: outputType(files.SearchFilesResult),
    description: "Rows of the listed runs' processed files matching the term, run by run in the order given.",
    args: { input: t.arg({ type: inputType(files.SearchFilesInput), required: true }) },
    resolve: (_, { input }, { svc, actor }) => files.searchFiles(svc, { actor, input }),
  }),
  runDelta: t.field({
    nullable: true,
    type: outputType(delta.RunDelta),
    description: "Rows added and removed between two runs of one pipeline (whole records, as a multiset), paged.",
    args: {
      baseRunId: t.arg.id({ required: true, description: "The earlier run: rows only here are `removed`." }),
      compareRunId: t.arg.id({ required: true, description: "The later run: rows only here are `added`." }),
      page: t.arg.int(),
      limit: t.arg.int(),
    },
    resolve: (_, args, { svc, actor }) => delta.getRunDelta(svc, { actor, query: defined(args) }),
  }),
}));
