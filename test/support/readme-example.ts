import { readFile } from 'node:fs/promises';

/** The READMEs that show the client package's install command and its ten-line example, and the heading each shows them under. */
export const CLIENT_READMES = [
  { readme: 'README.md', file: new URL('../../README.md', import.meta.url), heading: '## Partners' },
  { readme: 'packages/client/README.md', file: new URL('../../packages/client/README.md', import.meta.url), heading: '# @bulk-import/client' },
];

/** The first ````lang` block of `text` after `heading`, its indentation removed. */
function blockAfter(file: URL, text: string, heading: string, lang: string): string {
  const section = text.slice(text.indexOf(heading));
  const block = new RegExp(`^( *)\`\`\`${lang}\\n([\\s\\S]*?)^ *\`\`\`$`, 'm').exec(section);
  if (!block) throw new Error(`${file.pathname}: no \`\`\`${lang} block after ${heading}`);
  const indent = block[1]!.length;
  return block[2]!.split('\n').map((line) => line.slice(indent)).join('\n');
}

/** The README's text, its first ```ts block after `heading` (the example) and the first command of its first ```sh block there (the install), without its comment. */
export async function exampleOf(file: URL, heading: string): Promise<{ text: string; code: string; install: string }> {
  const text = await readFile(file, 'utf8');
  const install = blockAfter(file, text, heading, 'sh').split('\n')[0]!.replace(/#.*$/, '').trim();
  return { text, code: blockAfter(file, text, heading, 'ts'), install };
}
