import { existsSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fromRoot, githubSlug, headingAnchors, isExternal, markdownLinks, readText, repositoryFiles } from '../support/markdown-links.js';

const ROOT = resolve(fileURLToPath(new URL('../../', import.meta.url)));
const MARKDOWN = repositoryFiles(ROOT, ['.md']);
/** Files that may cite a document or a path: the source, tests, SQL, configuration and the docs. */
const CITING = repositoryFiles(ROOT, ['.md', '.ts', '.mjs', '.js', '.sql', '.yml', '.yaml', '.json']);
/** note: these two hold the patterns below as text. */
const PATTERN_HOLDERS = new Set(['test/docs/links.test.ts', 'test/support/markdown-links.ts']);

/**
 * A document cited by its path from the repository's root in a comment, a test or a doc
 * (`docs/access.md#in-flight-cap`, `bench/README.md`, `SECURITY.md`), not as a Markdown link.
 */
const CITATION = /(?<![\w./-])((?:docs\/[\w-]+|bench\/README|[A-Z][A-Z_-]*)\.md)(?:#([\w-]+))?/g;
/** A relative path that climbs: it must stay inside the repository. */
const CLIMBING_PATH = /(?<![\w./-])((?:\.\.\/)+[\w.{}-]+(?:\/[\w.{}-]+)*)/g;
/** Documents outside the repository, cited by path or by section: every clone lacks them. */
const OUTSIDE_DOCUMENTS: [RegExp, string][] = [
  [/shared\/spec/g, 'a path beside the repository'],
  [/\bdecisions\.md\b/g, 'an outside file of decisions'],
  [/\b[Ss]pec(?:ification)?(?:'s)? \d+(?:\.\d+)*/g, 'a numbered section of an outside document'],
  [/\b[Dd]ecisions [A-J]\b/g, 'a lettered section of an outside document'],
  [/\bthe spec(?:ification)?(?:'s)?\b/gi, 'an outside specification'],
];

function lineAt(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

const anchorsOf = new Map<string, Set<string>>();
function anchors(path: string): Set<string> {
  let found = anchorsOf.get(path);
  if (found === undefined) {
    found = headingAnchors(readText(ROOT, path));
    anchorsOf.set(path, found);
  }
  return found;
}

function insideRoot(absolute: string): boolean {
  return absolute === ROOT || absolute.startsWith(ROOT + sep);
}

/** What is wrong with a link to `target` (a path with an optional #anchor) from `file`, or undefined. */
function brokenLink(file: string, target: string): string | undefined {
  const hashAt = target.indexOf('#');
  const path = decodeURIComponent(hashAt === -1 ? target : target.slice(0, hashAt));
  const anchor = hashAt === -1 ? undefined : target.slice(hashAt + 1);
  const absolute = path === '' ? join(ROOT, file) : resolve(ROOT, dirname(file), path);
  if (!insideRoot(absolute)) return 'points outside the repository';
  if (!existsSync(absolute)) return `${fromRoot(ROOT, absolute)} does not exist`;
  const linked = fromRoot(ROOT, absolute);
  if (anchor !== undefined && linked.endsWith('.md') && !anchors(linked).has(anchor)) return `${linked} has no heading #${anchor}`;
  return undefined;
}

describe('githubSlug: the anchors GitHub gives headings', () => {
  it.each([
    ['Quick start', 'quick-start'],
    ['GET /v1/api/me', 'get-v1apime'],
    ['`RateLimit` and `RateLimit-Policy`', 'ratelimit-and-ratelimit-policy'],
    ['Retrying safely: `Idempotency-Key`', 'retrying-safely-idempotency-key'],
    ['Partners: integrate in ten minutes', 'partners-integrate-in-ten-minutes'],
    ['Sync ÷ insert, three runs', 'sync--insert-three-runs'],
    ['PostgreSQL: PgBouncer and failover', 'postgresql-pgbouncer-and-failover'],
    ['See [access](access.md) here', 'see-access-here'],
    ['snake_case names', 'snake_case-names'],
  ])('%s -> #%s', (heading, slug) => {
    expect(githubSlug(heading)).toBe(slug);
  });

  it('numbers a repeated heading -1, -2, and ignores headings in code blocks', () => {
    const markdown = ['# Exit status', 'text', '## Exit status', '```sh', '# not a heading', '```', '### Exit status'].join('\n');
    expect([...headingAnchors(markdown)]).toEqual(['exit-status', 'exit-status-1', 'exit-status-2']);
  });
});

describe('markdownLinks', () => {
  it('finds inline links, images, links broken across lines and reference definitions, not code', () => {
    const markdown = [
      'See [Row', 'sizes](#row-sizes) and ![a](img/a.png "title").',
      '`[not](a-link.md)` and',
      '```md',
      '[nor](this.md)',
      '```',
      '[ref]: docs/rows.md#external-id',
    ].join('\n');
    expect(markdownLinks(markdown)).toEqual([
      { line: 2, target: '#row-sizes' },
      { line: 2, target: 'img/a.png' },
      { line: 7, target: 'docs/rows.md#external-id' },
    ]);
  });
});

describe('the repository\'s Markdown', () => {
  it('includes the front door and the docs', () => {
    for (const path of ['README.md', 'docs/README.md', 'bench/README.md', 'CHANGELOG.md', 'SECURITY.md']) expect(MARKDOWN).toContain(path);
  });

  it.each(MARKDOWN)('%s: every relative link reaches a file of the repository, and every #anchor a heading there', (file) => {
    const problems = markdownLinks(readText(ROOT, file))
      .filter(({ target }) => !isExternal(target))
      .map(({ line, target }) => {
        const problem = brokenLink(file, target);
        return problem === undefined ? undefined : `${file}:${line}: (${target}) ${problem}`;
      })
      .filter((problem) => problem !== undefined);
    expect(problems).toEqual([]);
  });
});

describe('citations in every file of the repository (md, ts, sql, yml, json)', () => {
  it.each(CITING)('%s: a document cited by its path exists, with the heading its #anchor names', (file) => {
    const text = readText(ROOT, file);
    const problems = [...text.matchAll(CITATION)]
      .map((match) => {
        const problem = brokenLink('README.md', match[2] === undefined ? match[1]! : `${match[1]}#${match[2]}`);
        return problem === undefined ? undefined : `${file}:${lineAt(text, match.index)}: ${match[0]} ${problem}`;
      })
      .filter((problem) => problem !== undefined);
    expect(problems).toEqual([]);
  });

  it.each(CITING.filter((file) => !PATTERN_HOLDERS.has(file)))('%s: cites nothing outside the repository', (file) => {
    const text = readText(ROOT, file);
    const problems: string[] = [];
    for (const match of text.matchAll(CLIMBING_PATH)) {
      if (!insideRoot(resolve(ROOT, dirname(file), match[1]!))) problems.push(`${file}:${lineAt(text, match.index)}: ${match[1]} is outside the repository`);
    }
    for (const [pattern, what] of OUTSIDE_DOCUMENTS) {
      for (const match of text.matchAll(pattern)) problems.push(`${file}:${lineAt(text, match.index)}: "${match[0]}" cites ${what}, a document outside the repository`);
    }
    expect(problems).toEqual([]);
  });
});
