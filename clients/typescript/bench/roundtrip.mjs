// create + exec true + release through @mayurajs/sandbox-native, N times
// against the mayurad at SOCKET: prints "median p95" in ms (bench_clients
// runs it beside the same from C++).
//   node roundtrip.mjs SOCKET N
import { nativeSandboxes } from '../dist/index.js';

const [socket, count] = process.argv.slice(2);
const n = Number(count ?? 100);
const provider = nativeSandboxes({ socket });
const once = async () => {
  const s = await provider.create({ lifetimeMs: 60_000 });
  const r = await s.exec(['/bin/true']);
  if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`);
  await s.release();
};
await once();  // warm up
const ms = [];
for (let i = 0; i < n; ++i) {
  const start = process.hrtime.bigint();
  await once();
  ms.push(Number(process.hrtime.bigint() - start) / 1e6);
}
ms.sort((a, b) => a - b);
console.log(`${ms[Math.floor(ms.length / 2)].toFixed(3)} ${ms[Math.min(ms.length - 1, Math.floor(ms.length * 0.95))].toFixed(3)}`);
