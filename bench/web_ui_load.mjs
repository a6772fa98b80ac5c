// Time for the web UI to show the overview's GPU grid in Chromium, from
// navigation, with a cold cache (fresh browser context each time) and warm
// (same context, assets from the browser cache), and the bytes moved.
//
//   TRAINYARD_BIN=build/trainyard FAKE_NVML_LIB=build/tests/fake_nvml/libnvidia-ml-fake.so \
//     TY_WEB_DIST=web/dist RUNS=20 node bench/web_ui_load.mjs
//
// Uses the browser tests' helpers (web/e2e/lib.mjs) and their dependencies.
import { launchBrowser, startServer } from '../web/e2e/lib.mjs';

const runs = Number(process.env.RUNS ?? 20);
const server = await startServer();
const browser = await launchBrowser();

function stats(ms) {
  const s = [...ms].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return `median ${q(0.5).toFixed(0)} ms, p90 ${q(0.9).toFixed(0)} ms, max ${s[s.length - 1].toFixed(0)} ms`;
}

async function logIn(context) {
  const page = await context.newPage();
  await page.goto(server.url + '/login');
  await page.getByRole('tab', { name: 'Token' }).click();
  await page.getByLabel('Token').fill(server.token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.locator('[data-gpu-state]').first().waitFor();
  return page;
}

// Bytes come from the DevTools protocol (encodedDataLength: what crossed the
// socket, compressed), so answers served from the browser cache count zero.
async function timeOverview(page, cdp) {
  let bytes = 0;
  const count = (e) => {
    bytes += e.encodedDataLength;
  };
  cdp.on('Network.loadingFinished', count);
  const start = performance.now();
  await page.goto(server.url + '/');
  await page.locator('[data-gpu-state]').first().waitFor();
  const ms = performance.now() - start;
  cdp.off('Network.loadingFinished', count);
  return { ms, bytes };
}

try {
  const cold = [];
  let coldBytes = 0;
  for (let i = 0; i < runs; i++) {
    const context = await browser.newContext();
    const page = await logIn(context);
    // A new context has an empty cache: the login page loaded the assets,
    // so clear it again to time a first visit.
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.clearBrowserCache');
    const r = await timeOverview(page, cdp);
    cold.push(r.ms);
    coldBytes = r.bytes;
    await context.close();
  }
  const context = await browser.newContext();
  const page = await logIn(context);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  const warm = [];
  let warmBytes = 0;
  for (let i = 0; i < runs; i++) {
    const r = await timeOverview(page, cdp);
    warm.push(r.ms);
    warmBytes = r.bytes;
  }
  console.log(`overview to first GPU tile, ${runs} runs each`);
  console.log(`  cold cache: ${stats(cold)}; ${(coldBytes / 1024).toFixed(0)} KiB over the wire`);
  console.log(`  warm cache: ${stats(warm)}; ${(warmBytes / 1024).toFixed(0)} KiB over the wire`);
} finally {
  await browser.close();
  await server.stop();
}
