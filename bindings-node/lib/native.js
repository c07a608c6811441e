'use strict';
// The native addon (its declarations: native.d.ts, generated from the Rust sources).
// A release install gets it prebuilt from a platform package that the main package
// lists in optionalDependencies (npm installs only the one whose os/cpu/libc match);
// nothing is compiled on `npm install`. Where it is looked for, first hit wins:
//   1. $FERROLOCK_NATIVE_LIBRARY_PATH, when set (and nothing else then: the user
//      asked for that file, a silent fallback would hide their mistake);
//   2. a build from source in the package folder (ferrolock.node, what
//      scripts/build.js writes), so a clone's tests use what they just built;
//   3. the platform package for this platform, arch and libc.
// Otherwise the error names the platform and what to do, every load error chained.

const fs = require('node:fs');
const path = require('node:path');
const { version } = require('../package.json');

const root = path.join(__dirname, '..');
const binaryName = 'ferrolock';
// Prebuilt platform packages, by napi's platform-arch-abi name (see npm/ and the
// package's "napi" config); the only Rust target this project builds.
const platformPackages = {
  'linux-x64-gnu': { name: '@ferrolock/ferrolock-linux-x64-gnu', note: 'glibc >= 2.17' },
};

// musl or glibc, detected the way napi-rs's generated loader does it: the text of
// /usr/bin/ldd, else the process report's glibc version, else `ldd --version`.
function libc() {
  if (process.platform !== 'linux') return null;
  try {
    return fs.readFileSync('/usr/bin/ldd', 'utf8').includes('musl') ? 'musl' : 'glibc';
  } catch {
    // no ldd script (a distroless image): ask the process report
  }
  if (typeof process.report?.getReport === 'function') {
    process.report.excludeNetwork = true;
    const report = process.report.getReport();
    if (report?.header?.glibcVersionRuntime) return 'glibc';
    const objects = Array.isArray(report?.sharedObjects) ? report.sharedObjects : [];
    if (objects.some((f) => f.includes('libc.musl-') || f.includes('ld-musl-'))) return 'musl';
  }
  try {
    const out = require('node:child_process').execSync('ldd --version 2>&1', { encoding: 'utf8' });
    return out.includes('musl') ? 'musl' : 'glibc';
  } catch {
    return 'glibc';
  }
}

function platformKey(platform, arch, lib) {
  const abi = platform === 'linux' ? (lib === 'musl' ? '-musl' : '-gnu') : '';
  return `${platform}-${arch}${abi}`;
}

function tryRequire(file, errors) {
  try {
    return require(file);
  } catch (e) {
    errors.push(e);
    return null;
  }
}

function load() {
  const errors = [];
  const lib = libc();
  const key = platformKey(process.platform, process.arch, lib);
  const override = process.env.FERROLOCK_NATIVE_LIBRARY_PATH;
  if (override) {
    const addon = tryRequire(path.resolve(override), errors);
    if (addon) return addon;
  } else {
    for (const file of [`${binaryName}.node`, `${binaryName}.${key}.node`]) {
      const local = path.join(root, file);
      // A missing local build is the normal case of an install: not an error to report.
      if (!fs.existsSync(local)) continue;
      const addon = tryRequire(local, errors);
      if (addon) return addon;
    }
    const pkg = platformPackages[key];
    if (pkg) {
      const addon = tryRequire(pkg.name, errors);
      if (addon) {
        const found = tryRequire(`${pkg.name}/package.json`, errors)?.version;
        if (found === version) return addon;
        errors.push(new Error(`${pkg.name} is version ${found}, ferrolock ${version} needs the same version`));
      }
    }
  }
  throw loadError(key, lib, override, errors);
}

function loadError(key, lib, override, errors) {
  const supported = Object.entries(platformPackages).map(([k, p]) => `${k} (${p.note}, ${p.name})`);
  const pkg = platformPackages[key];
  const lines = [
    `ferrolock: cannot load its native addon on platform ${process.platform}, arch ${process.arch}, ` +
      `libc ${lib ?? 'n/a'} (${key}).`,
    `Prebuilt addons exist for: ${supported.join(', ')}.`,
  ];
  if (override) {
    lines.push(`FERROLOCK_NATIVE_LIBRARY_PATH is set (${override}) and that file did not load; unset it to use the prebuilt addon.`);
  } else if (pkg) {
    lines.push(
      `This platform is supported: its addon comes in ${pkg.name}@${version}, an optional dependency of ferrolock ` +
        'that is missing or did not load. npm has a bug with optional dependencies (https://github.com/npm/cli/issues/4828): ' +
        'delete node_modules and package-lock.json and run `npm install` again; do not install with --omit=optional / --no-optional.',
    );
  }
  lines.push(
    'Or build the addon from source (needs a Rust toolchain with cargo, https://rustup.rs): in a clone of the ferrolock ' +
      'repository, `cd bindings-node && npm install && npm run build` writes bindings-node/ferrolock.node; then ' +
      '`npm install /path/to/ferrolock/bindings-node` in your project, or set FERROLOCK_NATIVE_LIBRARY_PATH to that ferrolock.node.',
  );
  if (errors.length) lines.push('Load errors:', ...errors.map((e) => `  - ${e.message.split('\n')[0]}`));
  const cause = errors.length === 1 ? errors[0] : errors.length ? new AggregateError(errors, 'every candidate failed') : undefined;
  return new Error(lines.join('\n'), cause ? { cause } : undefined);
}

module.exports = load();
