'use strict';
// The migration pages' tables, checked row by row (docs/site/migration/<page>.md).
//
// Every table row of a migration page ends with `<!-- row: PAGE/ID -->`. A test file
// here calls `rows(page)` and registers each test with `row(ids, title, fn)`: the test
// runs the peer library's call and ferrolock's mapped call on one scenario against
// a real redis-server, and its title carries the ids it backs. After the file's
// tests, its `after` hook fails unless every row of the page passed and every id
// named exists on the page (scripts/docs/check_rows.py checks the same statically,
// in the docs build). The peers are pinned in package.json and package-lock.json
// beside this file (`npm ci` here; bindings-node/test.sh runs it).

const fs = require('node:fs');
const path = require('node:path');
const { test, after } = require('node:test');

const PAGES = path.join(__dirname, '..', '..', '..', 'docs', 'site', 'migration');
const ROW = /<!-- row: ([a-z0-9-]+\/[a-z0-9-]+) -->/g;

/** The row ids of docs/site/migration/PAGE.md, in order. */
function pageRows(page) {
  return [...fs.readFileSync(path.join(PAGES, `${page}.md`), 'utf8').matchAll(ROW)].map((m) => m[1]);
}

/** `row(ids, title, fn)` for the tests of `page`, checked against the page once they ran. */
function rows(page) {
  const onPage = pageRows(page);
  const named = new Set();
  const passed = new Set();
  function row(ids, title, fn) {
    ids = [].concat(ids);
    for (const id of ids) named.add(id);
    test(`[${ids.join(' ')}] ${title}`, async (t) => {
      await fn(t);
      for (const id of ids) passed.add(id);
    });
  }
  after(() => {
    const unknown = [...named].filter((id) => !onPage.includes(id));
    const unbacked = onPage.filter((id) => !passed.has(id));
    const problems = [];
    if (unknown.length) problems.push(`tests name rows that ${page}.md lacks: ${unknown.join(', ')}`);
    if (unbacked.length) problems.push(`rows of ${page}.md without a passing test: ${unbacked.join(', ')}`);
    if (problems.length) throw new Error(problems.join('; '));
  });
  return row;
}

module.exports = { rows, pageRows };
