import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { z } from 'zod';

/** The rules the repository ships, and their promtool unit tests. */
export const RULES_DIR = fileURLToPath(new URL('../../ops/prometheus/', import.meta.url));
export const RULES_FILE = 'alerts.yml';
export const RULE_TESTS_FILE = 'alerts.test.yml';

const RecordingRuleSchema = z.object({ record: z.string(), expr: z.string() });
const AlertingRuleSchema = z.object({
  alert: z.string(),
  expr: z.string(),
  for: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
export type AlertingRule = z.infer<typeof AlertingRuleSchema>;

const RuleFileSchema = z.object({
  groups: z.array(z.object({ name: z.string(), rules: z.array(z.union([RecordingRuleSchema, AlertingRuleSchema])) })),
});

const RuleTestsSchema = z.object({
  tests: z.array(
    z.object({
      name: z.string().optional(),
      alert_rule_test: z.array(z.object({ alertname: z.string(), eval_time: z.string(), exp_alerts: z.array(z.unknown()).default([]) })).default([]),
    }),
  ),
});
export type RuleTests = z.infer<typeof RuleTestsSchema>;

export async function readRules(): Promise<{ recording: z.infer<typeof RecordingRuleSchema>[]; alerting: AlertingRule[] }> {
  const file = RuleFileSchema.parse(parse(await readFile(RULES_DIR + RULES_FILE, 'utf8')));
  const rules = file.groups.flatMap((group) => group.rules);
  return {
    recording: rules.filter((rule) => 'record' in rule),
    alerting: rules.filter((rule) => 'alert' in rule),
  };
}

export async function readRuleTests(): Promise<RuleTests> {
  return RuleTestsSchema.parse(parse(await readFile(RULES_DIR + RULE_TESTS_FILE, 'utf8')));
}

/**
 * Runs promtool in the rules' folder (the unit tests name the rule file relative to it).
 * note: a missing promtool fails the test, never skips it: CI installs it (Debian's
 * `prometheus` package), and rules nobody checked are worse than none.
 */
export function promtool(...args: string[]): Promise<{ exitCode: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile('promtool', args, { cwd: RULES_DIR }, (error, stdout, stderr) => {
      if (error && 'code' in error && error.code === 'ENOENT') {
        reject(new Error('promtool is not installed: apt-get install prometheus (Debian), as .ci/run does, or put promtool on PATH'));
        return;
      }
      resolve({ exitCode: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}
