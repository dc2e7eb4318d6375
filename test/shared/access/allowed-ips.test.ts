import { describe, expect, it } from 'vitest';
import { canonicalIpEntry, compileAllowedIps, isAllowedFrom } from '../../../src/shared/access/allowed-ips.js';

describe('canonicalIpEntry', () => {
  it.each([
    ['203.0.113.9', '203.0.113.9'],
    ['203.0.113.9/32', '203.0.113.9'],
    ['203.0.113.9/24', '203.0.113.0/24'],
    ['10.1.2.3/8', '10.0.0.0/8'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['2001:DB8:0:0::1', '2001:db8::1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001/128', '2001:db8::1'],
    ['2001:db8:4:5::1/48', '2001:db8:4::/48'],
    ['::ffff:198.51.100.7', '198.51.100.7'],
    ['::ffff:c633:6407', '198.51.100.7'],
    ['::ffff:198.51.100.7/120', '198.51.100.0/24'],
    ['::1', '::1'],
  ])('writes %s as %s', (raw, canonical) => {
    expect(canonicalIpEntry(raw)).toBe(canonical);
  });

  it.each(['', 'example.com', '203.0.113.300', '010.1.1.1', '1.2.3', '203.0.113.0/33', '2001:db8::/129', '203.0.113.0/024', '203.0.113.0/', '/24', 'fe80::1%eth0', ' 203.0.113.9', '203.0.113.9/24/1', 'x'.repeat(10_000)])(
    'refuses %j',
    (raw) => {
      expect(canonicalIpEntry(raw)).toBeUndefined();
    },
  );
});

describe('isAllowedFrom', () => {
  const allowed = compileAllowedIps(['203.0.113.0/24', '198.51.100.7', '2001:db8:4::/48', '2001:db8::1'])!;

  it.each([
    ['203.0.113.200', true],
    ['203.0.114.1', false],
    ['198.51.100.7', true],
    ['198.51.100.8', false],
    ['2001:db8:4:ffff::1', true],
    ['2001:db8:5::1', false],
    ['2001:db8::1', true],
    ['2001:db8::2', false],
    ['::ffff:203.0.113.5', true],
    ['::ffff:203.0.114.5', false],
    ['unknown', false],
  ])('%s: %s', (ip, expected) => {
    expect(isAllowedFrom(allowed, ip)).toBe(expected);
  });

  it('never matches an IPv4 client against an IPv6 block that would hold its mapped form', () => {
    expect(isAllowedFrom(compileAllowedIps(['::/0'])!, '203.0.113.5')).toBe(false);
    expect(isAllowedFrom(compileAllowedIps(['0.0.0.0/0'])!, '2001:db8::1')).toBe(false);
  });
});
