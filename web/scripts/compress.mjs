// Writes NAME.br and NAME.gz beside every file in DIST/assets, so that the
// server sends compressed bytes without compressing on each request (brotli
// at its highest quality costs about a second of CPU per megabyte).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync, constants } from 'node:zlib';

const dir = join(process.argv[2] ?? 'dist', 'assets');
const worth = /\.(js|css|svg|json|html|txt|map)$/;
let before = 0;
let after = 0;
for (const name of readdirSync(dir)) {
  if (!worth.test(name)) continue;
  const data = readFileSync(join(dir, name));
  const br = brotliCompressSync(data, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: data.length },
  });
  const gz = gzipSync(data, { level: 9 });
  writeFileSync(join(dir, `${name}.br`), br);
  writeFileSync(join(dir, `${name}.gz`), gz);
  before += data.length;
  after += br.length;
}
console.log(`compressed assets: ${(before / 1024).toFixed(0)} KiB -> ${(after / 1024).toFixed(0)} KiB brotli`);
