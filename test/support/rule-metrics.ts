import { parseSamples } from './prometheus.js';
import { readRules } from './prometheus-rules.js';
import { metricSelectors } from './promql.js';

export type MetricFamilies = Map<string, { type: string; labels: Set<string> }>;

/** The metric families of a scrape (its # TYPE lines), each with the label names its samples carry. */
export function familiesOf(text: string): MetricFamilies {
  const families: MetricFamilies = new Map();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(name!, { type: type!, labels: new Set() });
  for (const sample of parseSamples(text)) {
    const family = families.get(sample.name) ?? families.get(sample.name.replace(/_(bucket|sum|count)$/, ''));
    for (const label of Object.keys(sample.labels)) family?.labels.add(label);
  }
  return families;
}

/**
 * What ops/prometheus/alerts.yml reads that `exposed` lacks: a metric, or a label a rule matches
 * on; one line per problem, none when every rule finds what it reads.
 */
export async function rulesMissing(exposed: MetricFamilies): Promise<string[]> {
  const { recording, alerting } = await readRules();
  const recorded = new Set(recording.map((rule) => rule.record));
  const problems: string[] = [];
  for (const rule of [...recording, ...alerting]) {
    const ruleName = 'record' in rule ? rule.record : rule.alert;
    for (const { metric, labels } of metricSelectors(rule.expr)) {
      if (recorded.has(metric)) continue;
      // note: a histogram's series (_bucket, _sum, _count) belong to its family; a counter's
      // name with _count added is a typo, not a series.
      const suffixed = /^(.*)_(bucket|sum|count)$/.exec(metric);
      const family = exposed.get(metric) ?? (suffixed && exposed.get(suffixed[1]!)?.type === 'histogram' ? exposed.get(suffixed[1]!) : undefined);
      if (!family) {
        problems.push(`${ruleName}: ${metric} is not exposed`);
        continue;
      }
      for (const label of labels.filter((l) => !family.labels.has(l))) problems.push(`${ruleName}: ${metric} has no label ${label}`);
    }
  }
  return problems;
}
