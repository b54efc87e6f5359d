// Drives corpsim serve's live page in headless Chromium with playwright-core
// (from the npm registry, not corpsim's): it prints one JSON line per phase
// to stdout, and waits for a line on stdin where the Go test must act.
//   node live_page.mjs CHROMIUM URL SCREENSHOT_DIR
import { chromium } from 'playwright-core';
import * as readline from 'node:readline';

const [browserPath, url, shots] = process.argv.slice(2);
const lines = readline.createInterface({ input: process.stdin });
const next = () => new Promise((resolve) => lines.once('line', resolve));
const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const browser = await chromium.launch({
  executablePath: browserPath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1300, height: 1400 } });
  const events = async () => Number(await page.textContent('#events'));
  const live = () => page.waitForFunction(() => ['live', 'the session has ended'].includes(document.getElementById('conn').textContent), null, { timeout: 60000 });
  await page.goto(url); // ?token= sets the cookie and redirects to the page
  await live();
  const first = await events();
  say({ phase: 'first', events: first, url: page.url(), status: await page.textContent('#status') });
  await next(); // the test starts the session and its player
  await page.waitForFunction((n) => Number(document.getElementById('events').textContent) > n, first, { timeout: 60000 });
  const updated = await events();
  const members = await page.$$eval('#members tbody tr', (rows) => rows.length);
  say({ phase: 'updated', events: updated, members, status: await page.textContent('#status') });
  await page.screenshot({ path: shots + '/live-running.png', fullPage: true });
  await page.reload();
  await live();
  say({ phase: 'reloaded', events: await events(), status: await page.textContent('#status') });
  await next(); // the test plays the remote seat to the end
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('ended'), null, { timeout: 120000 });
  say({ phase: 'ended', events: await events(), score: Number(await page.textContent('#score')),
    status: await page.textContent('#status'), latest: await page.$$eval('#latest tbody tr', (rows) => rows.length),
    queues: await page.$$eval('#queues tbody tr', (rows) => rows.length) });
  await page.screenshot({ path: shots + '/live-ended.png', fullPage: true });
} finally {
  await browser.close();
  lines.close();
}
