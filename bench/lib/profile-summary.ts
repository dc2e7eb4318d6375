import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Which package (or part of Node) a frame belongs to: `zod`, `fastify`, `(app)`, `(gc)`… */
function owner(url: string, functionName: string): string {
  if (functionName === '(garbage collector)') return '(gc)';
  if (functionName === '(idle)' || functionName === '(program)') return functionName;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return '(node)';
  if (url === '') return '(native)';
  return '(app)';
}

/** Self time by package and by function in a `.cpuprofile`, idle time left out. */
export function summariseProfile(path: string, top = 25): string {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const packages = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const pkg = owner(url, functionName);
    if (pkg === '(idle)') continue;
    busy += us;
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
    const name = `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/')}:${lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
  }
  const lines = [`busy ${Math.round(busy / 1000)} ms`];
  const share = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)}%`;
  for (const [pkg, us] of [...packages].sort((a, b) => b[1] - a[1]).slice(0, 15)) lines.push(`${share(us)}  ${pkg}`);
  lines.push('');
  for (const [name, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${share(us)}  ${name}`);
  return lines.join('\n');
}
