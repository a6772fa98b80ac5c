// The tour a new user makes, in a real browser against a real server:
// log in, submit through the form, watch the job run with live logs and a
// training-metric chart, cancel it, see a validation error at its field,
// see that a viewer cannot submit, and administer projects and users.
// A screenshot of each page goes to $TY_E2E_OUT.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, newPage, screenshot, startServer, waitFor, OUT } from './lib.mjs';

const EVE_PASSWORD = 'eve-password-1';
const VIC_PASSWORD = 'vic-password-1';
// Prints a log line and a training metric every 0.3 s for about a minute.
const TRAIN_SCRIPT = [
  'i=0',
  'while [ $i -lt 200 ]; do',
  '  i=$((i+1))',
  '  echo "step $i"',
  '  echo "TRAINYARD_METRIC {\\"step\\":$i,\\"loss\\":$(awk -v i=$i \'BEGIN{printf "%.4f", 2/(1+0.2*i)}\')}"',
  '  sleep 0.3',
  'done',
].join('\n');

let server;
let browser;
const shots = [];
const openPages = [];

// A test of the tour: when it fails, a picture of every open page and the
// end of the server's log say what the user would have seen.
function step(name, body) {
  test(name, async () => {
    try {
      await body();
    } catch (e) {
      for (const [i, p] of openPages.entries()) {
        if (!p.isClosed()) await screenshot(p, `failed-${name.replace(/\W+/g, '-')}-${i}`).catch(() => {});
      }
      console.log(`server log (end):\n${server?.log().slice(-4000)}`);
      throw e;
    }
  });
}

// Waits for loading overlays and dialog animations to settle, so the
// picture shows the page as a user sees it, then saves it.
async function shot(page, name) {
  await page
    .waitForFunction(() => !document.querySelector('.ant-spin-spinning, .ant-spin-blur'), null, { timeout: 5000 })
    .catch(() => {});
  await page.waitForTimeout(400);
  shots.push(await screenshot(page, name));
}

// The text a user sees never contains the API's raw JSON.
async function assertNoRawJson(page) {
  const text = await page.locator('body').innerText();
  assert.ok(!text.includes('{"error"'), `raw JSON on ${page.url()}`);
}

async function logInWithToken(page, token) {
  await page.goto(server.url + '/');
  await page.waitForURL(/\/login/);
  await page.getByRole('tab', { name: 'Token' }).click();
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
}

// Types the credentials and presses Enter: the form works from the keyboard.
async function logInWithPassword(page, user, password) {
  await page.goto(server.url + '/login');
  await page.getByLabel('User').focus();
  await page.keyboard.type(user);
  await page.keyboard.press('Tab');
  await page.keyboard.type(password);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
}

// Counts the canvas pixels drawn in the chart's first series colour.
async function seriesPixels(chart) {
  return chart.locator('canvas').evaluate((canvas) => {
    const ctx = canvas.getContext('2d');
    const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (Math.abs(data[i] - 0x16) < 40 && Math.abs(data[i + 1] - 0x68) < 40 && Math.abs(data[i + 2] - 0xdc) < 40 && data[i + 3] > 100) n++;
    }
    return n;
  });
}

// Presses the dialog's Create button and waits for the dialog to close; if
// it stays open, the failure quotes what it says (a field's message or the
// API's error).
async function createIn(dialog) {
  await dialog.getByRole('button', { name: 'Create' }).click();
  try {
    await dialog.waitFor({ state: 'hidden', timeout: 20000 });
  } catch {
    throw new Error(`the dialog stayed open: ${await dialog.innerText().catch(() => '?')}`);
  }
}

function localTime(ms) {
  // The format of lib/time.ts formatTime, in the browser context's zone.
  return new Date(ms).toLocaleString('sv-SE', { timeZone: 'America/New_York' });
}

describe('web UI tour', { concurrency: false }, () => {
  let admin;
  let eve;

  before(async () => {
    server = await startServer();
    // Seed a project with an engineer and a viewer through the API.
    for (const [method, path, body] of [
      ['POST', '/api/v1/projects', { name: 'vision' }],
      ['POST', '/api/v1/users', { name: 'eve', password: EVE_PASSWORD }],
      ['POST', '/api/v1/users', { name: 'vic', password: VIC_PASSWORD }],
      ['PUT', '/api/v1/projects/vision/members/eve', { role: 'engineer' }],
      ['PUT', '/api/v1/projects/vision/members/vic', { role: 'viewer' }],
    ]) {
      const r = await server.api(method, path, body);
      assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
    }
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    console.log(`screenshots in ${OUT}:\n  ${shots.join('\n  ')}`);
  });

  step('admin logs in with the bootstrap token and sees the overview', async () => {
    admin = await newPage(browser);
    openPages.push(admin.page);
    await admin.page.goto(server.url + '/');
    await admin.page.waitForURL(/\/login/);
    await shot(admin.page, '01-login');
    await logInWithToken(admin.page, server.token);
    // Four fake A100s, two of them busy per NVML, drawn as tiles.
    await waitFor(async () => (await admin.page.locator('[data-gpu-state]').count()) === 4, {
      what: 'four GPU tiles',
    });
    await shot(admin.page, '02-overview');
    await assertNoRawJson(admin.page);
  });

  step('an engineer submits through the form and watches logs and metrics live', async () => {
    eve = await newPage(browser);
    openPages.push(eve.page);
    const { page } = eve;
    await logInWithPassword(page, 'eve', EVE_PASSWORD);
    await page.getByRole('menuitem', { name: 'Submit' }).click();
    await page.getByRole('heading', { name: 'Submit a job' }).waitFor();
    await page.getByLabel('Name').fill('e2e-train');
    await page.getByRole('radio', { name: 'Script' }).check();
    await page.getByLabel('Script').fill(TRAIN_SCRIPT);
    await page.getByLabel('GPUs').fill('1');
    await shot(page, '03-submit');
    await page.getByRole('button', { name: 'Submit', exact: true }).click();
    await page.waitForURL(/\/jobs\/\d+$/);
    const id = Number(page.url().split('/').pop());

    await page.locator('[data-state="running"]').first().waitFor({ timeout: 20000 });
    const log = page.getByTestId('log-view');
    await waitFor(async () => (await log.innerText()).includes('step 3'), { what: 'live log lines' });
    const chart = page.getByTestId('metric-charts').locator('[data-metric="loss"]').getByTestId('time-chart');
    await chart.locator('canvas').waitFor({ timeout: 20000 });
    await waitFor(async () => (await seriesPixels(chart)) > 20, { what: 'a drawn loss line' });

    // Times are the browser's local time, not the server's UTC.
    const job = (await server.api('GET', `/api/v1/jobs/${id}`)).json;
    assert.equal(job.user, 'eve');
    assert.ok((await page.locator('body').innerText()).includes(localTime(job.created_at)));
    await shot(page, '04-job-running');

    await page.getByRole('button', { name: 'Cancel job' }).click();
    await page.getByRole('button', { name: 'Yes, cancel' }).click();
    await page.locator('[data-state="cancelled"]').first().waitFor({ timeout: 20000 });
    assert.equal((await server.api('GET', `/api/v1/jobs/${id}`)).json.state, 'cancelled');
    await shot(page, '05-job-cancelled');
  });

  step('a value the API refuses is shown at its field', async () => {
    const { page } = eve;
    await page.goto(server.url + '/submit');
    await page.getByLabel('Name').fill('too-big');
    await page.getByRole('radio', { name: 'Script' }).check();
    await page.getByLabel('Script').fill('true');
    await page.getByLabel('GPUs').fill('64');
    await page.getByRole('button', { name: 'Submit', exact: true }).click();
    const gpusItem = page.locator('.ant-form-item').filter({ has: page.getByLabel('GPUs') });
    const error = gpusItem.locator('.ant-form-item-explain-error');
    await error.waitFor();
    assert.match(await error.innerText(), /GPU/i);
    assert.match(page.url(), /\/submit/);
    await shot(page, '06-submit-error');
    await assertNoRawJson(page);
  });

  step('a viewer has no submit button and the API refuses them anyway', async () => {
    const vic = await newPage(browser);
    openPages.push(vic.page);
    const { page } = vic;
    await logInWithPassword(page, 'vic', VIC_PASSWORD);
    assert.equal(await page.getByRole('menuitem', { name: 'Submit' }).count(), 0);
    await page.goto(server.url + '/submit');
    await page.getByText('You have no project where you may submit jobs').waitFor();
    const status = await page.evaluate(async () => {
      const csrf = sessionStorage.getItem('trainyard.csrf') ?? '';
      const res = await fetch('/api/v1/jobs', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
        body: JSON.stringify({ name: 'sneaky', project: 'vision', command: ['true'] }),
      });
      return res.status;
    });
    assert.equal(status, 403);
    await shot(page, '07-viewer-submit');
    await vic.context.close();
  });

  step('every page renders, on a laptop and on a 4K screen', async () => {
    const { page } = admin;
    for (const [path, heading, name] of [
      ['/jobs', 'Jobs', '08-jobs'],
      ['/queues', 'Queues and quotas', '09-queues'],
      ['/nodes', 'Nodes', '10-nodes'],
    ]) {
      await page.goto(server.url + path);
      await page.getByRole('heading', { name: heading }).waitFor();
      await assertNoRawJson(page);
      await shot(page, name);
    }
    await page.setViewportSize({ width: 1366, height: 768 });
    await page.goto(server.url + '/jobs');
    await page.getByRole('link', { name: 'e2e-train' }).first().waitFor();
    await shot(page, '11-jobs-laptop');
    await page.setViewportSize({ width: 3840, height: 2160 });
    await page.goto(server.url + '/');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await shot(page, '12-overview-4k');
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  step('an admin creates a project and a user', async () => {
    const { page } = admin;
    await page.goto(server.url + '/admin/projects');
    await page.getByRole('button', { name: 'New project' }).click();
    const projectDialog = page.getByRole('dialog');
    await projectDialog.getByLabel('Name').fill('nlp');
    await createIn(projectDialog);
    await waitFor(async () => (await server.api('GET', '/api/v1/projects')).json.projects.some((p) => p.name === 'nlp'), {
      what: 'project nlp',
    });
    await page.getByRole('cell', { name: 'nlp', exact: true }).waitFor();
    await shot(page, '13-admin-projects');

    await page.goto(server.url + '/admin/users');
    await page.getByRole('button', { name: 'New user' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('dana');
    await dialog.getByLabel('Password').fill('dana-password-1');
    await createIn(dialog);
    await waitFor(async () => (await server.api('GET', '/api/v1/users/dana')).status === 200, { what: 'user dana' });
    await page.getByRole('cell', { name: 'dana', exact: true }).waitFor();
    await shot(page, '14-admin-users');

    for (const section of ['members', 'tokens', 'audit', 'queues']) {
      await page.goto(`${server.url}/admin/${section}`);
      await page.getByRole('heading', { name: 'Administration' }).waitFor();
      await page.waitForLoadState('networkidle');
      await assertNoRawJson(page);
      await shot(page, `15-admin-${section}`);
    }
  });

  step('an unknown page shows the app, not a server error', async () => {
    const { page } = admin;
    const res = await page.goto(server.url + '/no/such/page');
    assert.equal(res.status(), 404);
    await page.getByText('Page not found').waitFor();
    for (const p of [admin, eve]) assert.deepEqual(p.problems.filter((x) => !x.includes('the server responded with a status')), []);
  });
});
