import JSZip from "jszip";

/**
 * exceljs's writer orders zip entries by timing; Excel writes the workbook
 * (sheet names) first and shared strings after the sheets. Re-zip in Excel's
 * order so the streaming reader sees what real files give it.
 */
export async function excelOrder(xlsx: Uint8Array): Promise<Uint8Array> {
  const src = await JSZip.loadAsync(xlsx);
  const rank = (p: string) =>
    ["[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels"].indexOf(p) + 1 ||
    (p.startsWith("xl/worksheets/") ? 10 : p === "xl/sharedStrings.xml" ? 20 : 30);
  const out = new JSZip();
  const names = Object.keys(src.files)
    .filter((p) => !src.files[p]!.dir)
    .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  for (const p of names) out.file(p, await src.files[p]!.async("uint8array"));
  return out.generateAsync({ type: "uint8array", compression: "DEFLATE" });
}
