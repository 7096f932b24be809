// rowloop.ts writes the plan and reads the statuses by rowloop.c's enums: the C compiler says what they are.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SHARED_CONSTANTS } from "../src/engine/native/rowloop";

const SOURCE = join(import.meta.dir, "../src/engine/native/rowloop.c");

describe("the native row loop's constants", () => {
  test("every constant rowloop.ts shares with rowloop.c has the C compiler's value", () => {
    const dir = mkdtempSync(join(tmpdir(), "fps-enums-"));
    try {
      const names = Object.keys(SHARED_CONSTANTS);
      const program = [
        `#include "${SOURCE}"`,
        "#include <stdio.h>",
        "int main(void) {",
        ...names.map((n) => `  printf("%s %ld\\n", "${n}", (long)(${n}));`),
        "  return 0;",
        "}",
      ].join("\n");
      writeFileSync(join(dir, "enums.c"), program);
      const cc = Bun.spawnSync(["cc", "-w", "-o", join(dir, "enums"), join(dir, "enums.c")]);
      expect(cc.stderr.toString()).toBe("");
      expect(cc.exitCode).toBe(0);
      const out = Bun.spawnSync([join(dir, "enums")]).stdout.toString().trim().split("\n");
      const fromC = Object.fromEntries(out.map((l) => [l.split(" ")[0]!, Number(l.split(" ")[1])]));
      expect(fromC).toEqual({ ...SHARED_CONSTANTS });
      expect(names.length).toBeGreaterThan(60);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
