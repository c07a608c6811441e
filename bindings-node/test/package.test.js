'use strict';
// Which copy of the package the tests run against, and its release metadata: one
// version everywhere (the workspace's Cargo.toml), the platform package pinned at it,
// nothing built on install. scripts/package/verify-node.sh runs this suite inside an
// installed copy (node_modules/ferrolock/test, so '..' is that copy) with
// FERROLOCK_NODE_PACKAGE naming it and FERROLOCK_WORKSPACE the clone.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const pkgDir = fs.realpathSync(path.join(__dirname, '..'));
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
const installed = process.env.FERROLOCK_NODE_PACKAGE;
const workspace = process.env.FERROLOCK_WORKSPACE || path.join(pkgDir, '..');
const [platformName] = Object.keys(pkg.optionalDependencies);

function loadedAddons() {
  return Object.keys(require.cache).filter((f) => f.endsWith('.node'));
}

test('the package under test is the one asked for: the installed copy with its platform package, else this tree with its own build', () => {
  const ferrolock = require('..');
  assert.equal(typeof ferrolock.Client.connect, 'function');
  assert.equal(require.resolve('..'), path.join(pkgDir, 'index.js'));
  if (installed) {
    assert.equal(pkgDir, fs.realpathSync(installed), 'the tests run from inside the installed package');
    assert.ok(pkgDir.split(path.sep).includes('node_modules'), `${pkgDir} is not under node_modules`);
    assert.ok(!fs.existsSync(path.join(pkgDir, 'ferrolock.node')), 'an installed package holds no local build');
    const platform = fs.realpathSync(require.resolve(platformName, { paths: [pkgDir] }));
    assert.deepEqual(loadedAddons().map((f) => fs.realpathSync(f)), [platform]);
    assert.match(platform, /[/\\]node_modules[/\\]@ferrolock[/\\]ferrolock-linux-x64-gnu[/\\]ferrolock\.linux-x64-gnu\.node$/);
  } else {
    assert.deepEqual(loadedAddons(), [path.join(pkgDir, 'ferrolock.node')]);
  }
});

test("require('ferrolock').version is package.json's, the workspace's (Cargo.toml), the platform package's and its pin", () => {
  const cargo = fs.readFileSync(path.join(workspace, 'Cargo.toml'), 'utf8');
  const section = cargo.split(/^\[/m).find((s) => s.startsWith('workspace.package]'));
  assert.ok(section, 'Cargo.toml has no [workspace.package]');
  const [, cargoVersion] = section.match(/^version\s*=\s*"([^"]+)"/m);
  const platformJson = installed
    ? require.resolve(`${platformName}/package.json`, { paths: [pkgDir] })
    : path.join(pkgDir, 'npm', 'linux-x64-gnu', 'package.json');
  const platform = JSON.parse(fs.readFileSync(platformJson, 'utf8'));
  assert.equal(pkg.version, cargoVersion);
  assert.equal(require('..').version, cargoVersion);
  assert.equal(platform.name, platformName);
  assert.equal(platform.version, cargoVersion);
  // Exact: an addon of another version may not match this JS layer.
  assert.deepEqual(pkg.optionalDependencies, { [platformName]: cargoVersion });
});

test('npm install builds nothing, and the platform package is what the napi config names', () => {
  for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) {
    assert.equal(pkg.scripts?.[hook], undefined, `package.json has a ${hook} script`);
  }
  assert.equal(pkg.gypfile, undefined);
  const { binaryName, packageName, targets } = pkg.napi;
  assert.deepEqual(targets, ['x86_64-unknown-linux-gnu']);
  assert.equal(platformName, `${packageName}-linux-x64-gnu`);
  if (installed) return; // the installed platform package is checked by the first test
  const platform = JSON.parse(fs.readFileSync(path.join(pkgDir, 'npm', 'linux-x64-gnu', 'package.json'), 'utf8'));
  const file = `${binaryName}.linux-x64-gnu.node`;
  assert.deepEqual(
    { main: platform.main, files: platform.files, os: platform.os, cpu: platform.cpu, libc: platform.libc, license: platform.license },
    { main: file, files: [file], os: ['linux'], cpu: ['x64'], libc: ['glibc'], license: pkg.license },
  );
});
