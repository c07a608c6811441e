'use strict';
// lib/native.js, the addon's loader, in child processes that see the package the way
// an installation would: copies of its JS files in a scratch node_modules, with or
// without a platform package beside them, or with the override variable set.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');

const pkgDir = fs.realpathSync(path.join(__dirname, '..'));
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
const [platformName] = Object.keys(pkg.optionalDependencies);
const libc = process.report.getReport().header.glibcVersionRuntime ? 'glibc' : 'musl';
const onSupported = process.platform === 'linux' && process.arch === 'x64' && libc === 'glibc';

// The addon this run uses: the tree's own build, else the installed platform package's.
function builtAddon() {
  const local = path.join(pkgDir, 'ferrolock.node');
  return fs.existsSync(local) ? local : require.resolve(platformName, { paths: [pkgDir] });
}

// A scratch project whose node_modules/ferrolock holds the package's JS (its `files`),
// no addon; `platform` adds node_modules/<platform package> with the given package.json
// and the addon linked in.
function scratchProject(t, { platform } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferrolock-loader-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const into = path.join(dir, 'node_modules', 'ferrolock');
  for (const f of [...pkg.files, 'package.json']) fs.cpSync(path.join(pkgDir, f), path.join(into, f), { recursive: true });
  if (platform) {
    const at = path.join(dir, 'node_modules', ...platformName.split('/'));
    fs.mkdirSync(at, { recursive: true });
    fs.writeFileSync(path.join(at, 'package.json'), JSON.stringify(platform));
    fs.symlinkSync(builtAddon(), path.join(at, platform.main));
  }
  return dir;
}

// Requires 'ferrolock' in a child; answers what it loaded or the error it threw.
function load(cwd, env = {}) {
  const script = `
    try {
      const f = require('ferrolock');
      const addons = Object.keys(require.cache).filter((k) => k.endsWith('.node'));
      console.log(JSON.stringify({ ok: typeof f.Client.connect === 'function', version: f.version, addons }));
    } catch (e) {
      const causes = e.cause instanceof AggregateError ? e.cause.errors : e.cause ? [e.cause] : [];
      console.log(JSON.stringify({ message: e.message, causes: causes.map((c) => ({ code: c.code, message: c.message })) }));
    }`;
  const childEnv = { ...process.env, ...env };
  delete childEnv.NODE_PATH;
  if (!('FERROLOCK_NATIVE_LIBRARY_PATH' in env)) delete childEnv.FERROLOCK_NATIVE_LIBRARY_PATH;
  const r = spawnSync(process.execPath, ['-e', script], { cwd, env: childEnv, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

function assertNamesThePlatform(message) {
  assert.match(message, new RegExp(`platform ${process.platform}, arch ${process.arch}, libc ${process.platform === 'linux' ? libc : 'n/a'}`));
  assert.match(message, /Prebuilt addons exist for: linux-x64-gnu \(glibc >= 2\.17, @ferrolock\/ferrolock-linux-x64-gnu\)\./);
  assert.match(message, /build the addon from source \(needs a Rust toolchain with cargo/);
  assert.match(message, /npm run build/);
}

test('no platform package and no local build: the error names the platform, the supported ones, the npm bug and the source build', (t) => {
  const r = load(scratchProject(t));
  assert.ok(r.message, JSON.stringify(r));
  assertNamesThePlatform(r.message);
  if (onSupported) {
    assert.match(r.message, /@ferrolock\/ferrolock-linux-x64-gnu@\d+\.\d+\.\d+, an optional dependency of ferrolock/);
    assert.match(r.message, /npm\/cli\/issues\/4828/);
    assert.match(r.message, /delete node_modules and package-lock\.json/);
    assert.deepEqual(r.causes.map((c) => c.code), ['MODULE_NOT_FOUND']);
    assert.match(r.causes[0].message, /ferrolock-linux-x64-gnu/);
  }
});

test('FERROLOCK_NATIVE_LIBRARY_PATH at a missing file: that file only, its error chained', (t) => {
  const missing = path.join(os.tmpdir(), `ferrolock-no-such-addon-${process.pid}.node`);
  // A loadable platform package beside it is not a fallback: the user asked for that file.
  const r = load(scratchProject(t, { platform: onSupported ? platformPackage() : undefined }), { FERROLOCK_NATIVE_LIBRARY_PATH: missing });
  assert.ok(r.message, JSON.stringify(r));
  assertNamesThePlatform(r.message);
  assert.match(r.message, /FERROLOCK_NATIVE_LIBRARY_PATH is set/);
  assert.deepEqual(r.causes.map((c) => c.code), ['MODULE_NOT_FOUND']);
  assert.ok(r.causes[0].message.includes(missing), r.causes[0].message);
});

// The platform package as published (its package.json: the tree's, or the installed one).
function platformPackage(changes = {}) {
  const file = fs.existsSync(path.join(pkgDir, 'npm', 'linux-x64-gnu', 'package.json'))
    ? path.join(pkgDir, 'npm', 'linux-x64-gnu', 'package.json')
    : require.resolve(`${platformName}/package.json`, { paths: [pkgDir] });
  return { ...JSON.parse(fs.readFileSync(file, 'utf8')), ...changes };
}

test('the platform package is loaded when there is no local build', { skip: !onSupported && 'not linux-x64-gnu' }, (t) => {
  const dir = scratchProject(t, { platform: platformPackage() });
  const r = load(dir);
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(r.version, pkg.version);
  assert.deepEqual(r.addons, [fs.realpathSync(builtAddon())]);
  // The override wins over it.
  const o = load(dir, { FERROLOCK_NATIVE_LIBRARY_PATH: builtAddon() });
  assert.equal(o.ok, true, JSON.stringify(o));
});

test('a platform package of another version is refused', { skip: !onSupported && 'not linux-x64-gnu' }, (t) => {
  const r = load(scratchProject(t, { platform: platformPackage({ version: '0.0.0-other' }) }));
  assert.ok(r.message, JSON.stringify(r));
  assert.equal(r.causes.length, 1);
  assert.equal(r.causes[0].message, `${platformName} is version 0.0.0-other, ferrolock ${pkg.version} needs the same version`);
});

test('libc is detected without /usr/bin/ldd too (process report)', { skip: process.platform !== 'linux' && 'linux only' }, () => {
  const out = execFileSync(process.execPath, ['-e', `
    const fs = require('node:fs');
    const read = fs.readFileSync;
    fs.readFileSync = (f, ...a) => { if (f === '/usr/bin/ldd') throw Object.assign(new Error('no ldd'), { code: 'ENOENT' }); return read(f, ...a); };
    process.env.FERROLOCK_NATIVE_LIBRARY_PATH = '/nonexistent/ferrolock.node';
    try { require(${JSON.stringify(pkgDir)}); } catch (e) { console.log(e.message.split('\\n')[0]); }
  `], { encoding: 'utf8' });
  assert.match(out, new RegExp(`libc ${libc} `));
});
