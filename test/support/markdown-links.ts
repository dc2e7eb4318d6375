import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** What the repository holds besides what it builds, installs or records (as .gitignore says). */
const SKIPPED = new Set(['node_modules', '.git', 'dist', 'coverage', 'bench/results', 'test/faults/artifacts']);

/** Every file under `root` whose name ends with one of `extensions`, as paths relative to `root`. */
export function repositoryFiles(root: string, extensions: readonly string[], dir = ''): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (SKIPPED.has(path)) continue;
    if (entry.isDirectory()) files.push(...repositoryFiles(root, extensions, path));
    else if (extensions.some((extension) => entry.name.endsWith(extension))) files.push(path);
  }
  return files.sort();
}

/**
 * The anchor GitHub gives a heading (github-slugger): the heading's text as rendered, lower case,
 * without punctuation or symbols (letters, marks, digits, `_`, `-` and spaces stay), spaces as
 * `-`. A repeated slug gets `-1`, `-2`... (see headingAnchors).
 */
export function githubSlug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link shows its text
    .replace(/<[^>]+>/g, '') // inline HTML shows nothing of its tags
    .replace(/`/g, '');
  return rendered
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The text with fenced code blocks blanked line by line, so that line numbers stay. */
function withoutFencedCode(markdown: string): string {
  let fence: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
      if (fence === undefined && marker !== undefined) {
        fence = marker;
        return '';
      }
      if (fence !== undefined) {
        if (marker !== undefined && marker.startsWith(fence)) fence = undefined;
        return '';
      }
      return line;
    })
    .join('\n');
}

/** Every anchor a Markdown file offers: its headings' slugs and its HTML `id` / `name` attributes. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const text = withoutFencedCode(markdown);
  for (const line of text.split('\n')) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = githubSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const match of text.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  return anchors;
}

export interface MarkdownLink {
  /** 1-based line of the link's target */
  line: number;
  target: string;
}

/** The targets of a Markdown file's inline links and images and of its reference definitions, code excluded. */
export function markdownLinks(markdown: string): MarkdownLink[] {
  // note: code spans may break across lines; blanking keeps every character's line.
  const text = withoutFencedCode(markdown).replace(/`[^`]*`/g, (code) => code.replace(/[^\n]/g, ' '));
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  const links: MarkdownLink[] = [];
  for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    links.push({ line: lineOf(match.index + 2), target: match[1]! });
  }
  for (const match of text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)) {
    links.push({ line: lineOf(match.index), target: match[1]! });
  }
  return links;
}

/** A link to another site or protocol, which this check does not follow. */
export function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target);
}

/** `path` relative to `root`, with `/` separators. */
export function fromRoot(root: string, path: string): string {
  return relative(root, path).split('\\').join('/');
}

export function readText(root: string, path: string): string {
  return readFileSync(join(root, path), 'utf8');
}
