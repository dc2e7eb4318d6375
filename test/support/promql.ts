/** A metric selector in a PromQL expression: the metric's name and the label names it matches on. */
export interface MetricSelector {
  metric: string;
  labels: string[];
}

/** Words of PromQL that read like a metric name: operators, aggregations, literals. */
const KEYWORDS = new Set([
  'and', 'or', 'unless', 'atan2', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right',
  'sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile',
  'inf', 'nan',
]);

/**
 * One token at a time: strings, grouping label lists and ranges are skipped whole, so the names
 * inside them are never taken for metrics; a name followed by `(` is a function.
 */
const TOKEN = new RegExp(
  [
    /(?<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)/.source,
    /(?<grouping>\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\))/.source,
    /(?<range>\[[^\]]*\])/.source,
    /(?<number>\d[\w.]*)/.source,
    /(?<name>[a-zA-Z_:][\w:]*)(?:(?<call>\s*\()|(?<matchers>\s*\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\}))?/.source,
    /(?<bare>\{)/.source,
  ].join('|'),
  'g',
);
const MATCHER_LABEL = /([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g;

/**
 * The metric selectors of a PromQL expression, found without a full parser. note: enough for
 * rule files written by hand; a selector without a name (`{__name__=~"..."}`) is refused rather
 * than overlooked.
 */
export function metricSelectors(expr: string): MetricSelector[] {
  const selectors: MetricSelector[] = [];
  for (const match of expr.matchAll(TOKEN)) {
    const { name, call, matchers, bare } = match.groups ?? {};
    if (bare !== undefined) throw new Error(`a selector without a metric name in: ${expr}`);
    if (name === undefined || call !== undefined || KEYWORDS.has(name)) continue;
    const labels = matchers === undefined ? [] : [...matchers.matchAll(MATCHER_LABEL)].map(([, label]) => label!);
    selectors.push({ metric: name, labels });
  }
  return selectors;
}
