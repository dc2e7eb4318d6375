import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker, type RunningWorker } from '../../src/worker/worker.js';
import { bearer, validListing } from '../support/fixtures.js';
import { freePort } from '../support/processes.js';
import { promtool, readRules, readRuleTests, RULE_TESTS_FILE, RULES_FILE } from '../support/prometheus-rules.js';
import { metricSelectors } from '../support/promql.js';
import { familiesOf, rulesMissing, type MetricFamilies } from '../support/rule-metrics.js';
import { startTestService, type TestService } from '../support/test-service.js';

const ADMIN_USER = 'rules-ops';
const ADMIN_PASSWORD = 'rules-password-0123';
const ADMIN = { authorization: `Basic ${Buffer.from(`${ADMIN_USER}:${ADMIN_PASSWORD}`).toString('base64')}` };

describe('ops/prometheus/alerts.yml', () => {
  it('passes promtool check rules', async () => {
    const { exitCode, output } = await promtool('check', 'rules', RULES_FILE);
    expect(exitCode, output).toBe(0);
  });

  it('passes its unit tests (promtool test rules alerts.test.yml)', async () => {
    const { exitCode, output } = await promtool('test', 'rules', RULE_TESTS_FILE);
    expect(exitCode, output).toBe(0);
  });

  it('gives every alert a for:, a severity, a summary and a description', async () => {
    const { alerting } = await readRules();
    expect(alerting.length).toBeGreaterThan(0);
    for (const rule of alerting) {
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(['warning', 'critical'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description, rule.alert).toBeTruthy();
    }
  });

  it('has a unit test in which each alert fires and one in which it does not', async () => {
    const { alerting } = await readRules();
    const cases = (await readRuleTests()).tests.flatMap((test) => test.alert_rule_test);
    const alerts = alerting.map((rule) => rule.alert);
    for (const alert of alerts) {
      expect(cases.some((c) => c.alertname === alert && c.exp_alerts.length > 0), `${alert} fires`).toBe(true);
      expect(cases.some((c) => c.alertname === alert && c.exp_alerts.length === 0), `${alert} stays quiet`).toBe(true);
    }
    // note: promtool passes a test of an alert that does not exist as long as it expects none.
    expect(cases.map((c) => c.alertname).filter((name) => !alerts.includes(name))).toEqual([]);
  });
});

describe('metricSelectors', () => {
  it.each([
    { expr: 'max(bulk_import_queue_jobs{state="waiting"}) > 0', selectors: [{ metric: 'bulk_import_queue_jobs', labels: ['state'] }] },
    {
      expr: 'sum by (route, status) (rate(http_request_duration_seconds_count{status=~"5..", route!="a{b}"}[5m])) * 60',
      selectors: [{ metric: 'http_request_duration_seconds_count', labels: ['status', 'route'] }],
    },
    { expr: 'a:b:c / on(x) group_left sum without (y) (up offset 5m) > 1e3', selectors: [{ metric: 'a:b:c', labels: [] }, { metric: 'up', labels: [] }] },
  ])('finds the metrics of $expr', ({ expr, selectors }) => {
    expect(metricSelectors(expr)).toEqual(selectors);
  });

  it('refuses a selector without a metric name', () => {
    expect(() => metricSelectors('sum({__name__=~"bulk_.*"})')).toThrow(/without a metric name/);
  });
});

describe('the metrics ops/prometheus/alerts.yml uses', () => {
  let service: TestService;
  let worker: RunningWorker;
  let exposed: MetricFamilies;

  beforeAll(async () => {
    service = await startTestService({ worker: false, env: { ADMIN_USER, ADMIN_PASSWORD } });
    const port = await freePort();
    worker = await startWorker({ ...service.config, host: '127.0.0.1', metricsPort: port }, service.deps.log.child({ part: 'worker' }));
    // One import, so the labelled families have samples whose labels can be compared.
    const key = await service.createKey(await service.createAccount(), ['listings:write']);
    const res = await service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } });
    expect(res.statusCode).toBe(201);
    const api = await service.request({ method: 'GET', url: '/metrics', headers: ADMIN });
    expect(api.statusCode).toBe(200);
    const workerText = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
    exposed = new Map([...familiesOf(api.body), ...familiesOf(workerText)]);
  });
  afterAll(async () => {
    await worker?.close();
    await service?.close();
  });

  it('are all exposed by the API or a worker, with the labels the rules match on', async () => {
    expect(await rulesMissing(exposed)).toEqual([]);
  });

  it('include the worker slots the autoscaling signal is made of', () => {
    expect(exposed.get('bulk_import_worker_busy_slots')?.type).toBe('gauge');
    expect(exposed.get('bulk_import_worker_slots')?.type).toBe('gauge');
  });
});
