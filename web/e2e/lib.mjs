// Helpers for the browser tests: start a real `trainyard server` on loopback
// with the fake NVML, call its API with the bootstrap admin token, and drive
// Debian's Chromium through playwright-core.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, existsSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const OUT = process.env.TY_E2E_OUT ?? join(process.cwd(), 'e2e-out');

function need(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through ctest (build-test), which sets it`);
  return value;
}

// Polls `check` until it returns a truthy value or the deadline passes.
export async function waitFor(check, { timeoutMs = 20000, intervalMs = 200, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await check();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${last}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export async function startServer() {
  const bin = need('TRAINYARD_BIN');
  const nvml = need('FAKE_NVML_LIB');
  const webRoot = need('TY_WEB_DIST');
  const dir = mkdtempSync(join(tmpdir(), 'ty-web-e2e-'));
  const dataDir = join(dir, 'var');
  mkdirSync(dataDir);
  const token = 'ty_' + randomBytes(32).toString('base64url').slice(0, 43);
  const tokenFile = join(dir, 'admin.token');
  writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
  const config = join(dir, 'server.yaml');
  writeFileSync(config, 'gpu_monitor:\n  sample_interval: 500ms\n');
  const log = join(dir, 'server.log');
  const child = spawn(
    bin,
    ['server', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--bootstrap-token-file', tokenFile,
     '--nvml-library', nvml, '--config', config, '--web-root', webRoot],
    {
      env: {
        ...process.env,
        FAKE_NVML_GPUS: '4xA100-80GB',
        FAKE_NVML_GPU_UTIL: '85,40,0,0',
        FAKE_NVML_MEMORY_USED_MIB: '30000,12000,0,0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const chunks = [];
  child.stdout.on('data', (d) => chunks.push(d));
  child.stderr.on('data', (d) => chunks.push(d));
  const urlFile = join(dataDir, 'server.url');
  const url = await waitFor(() => (existsSync(urlFile) ? readFileSync(urlFile, 'utf8').trim() : null), {
    what: 'server.url',
  }).catch((e) => {
    child.kill('SIGKILL');
    throw new Error(`${e.message}\n${Buffer.concat(chunks).toString()}`);
  });
  await waitFor(async () => (await fetch(url + '/readyz')).ok, { what: 'readyz' });
  const server = {
    url,
    token,
    dir,
    log: () => Buffer.concat(chunks).toString(),
    async api(method, path, body) {
      const res = await fetch(url + path, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      let json;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.status, json, text, headers: res.headers };
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const done = new Promise((r) => child.once('exit', r));
        const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
        await done;
        clearTimeout(timer);
      }
      if (!process.env.TY_E2E_KEEP) rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    // --no-sandbox: the tests may run as root, where Chromium's sandbox refuses to start.
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

// A fresh browser profile (cookies, storage) in a time zone other than the
// machine's UTC, so the pages' local-time formatting is exercised.
export async function newPage(browser, { width = 1440, height = 900 } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, timezoneId: 'America/New_York' });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  return { context, page, problems };
}

export async function screenshot(page, name) {
  mkdirSync(OUT, { recursive: true });
  const path = join(OUT, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
