import { describe, expect, it } from 'vitest';
import { canonicalIp, lockoutSubject } from '../../src/api/client-ip.js';

describe('canonicalIp', () => {
  it.each([
    ['198.51.100.7', '198.51.100.7'],
    ['::ffff:198.51.100.7', '198.51.100.7'],
    ['::FFFF:198.51.100.7', '198.51.100.7'],
    ['::ffff:c633:6407', '198.51.100.7'],
    ['2001:DB8::1', '2001:db8::1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['::1', '::1'],
  ])('writes %s as %s', (raw, canonical) => {
    expect(canonicalIp(raw)).toBe(canonical);
  });

  it.each(['garbage', '010.001.001.001', '10.1.1.1:1234', '[2001:db8::1]', '', ' 10.1.1.1', '1.2.3.4.5', 'x'.repeat(12_000)])(
    'refuses %s, which is not an address',
    (raw) => {
      expect(canonicalIp(raw)).toBeUndefined();
    },
  );
});

describe('lockoutSubject', () => {
  it.each([
    ['198.51.100.7', '198.51.100.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::ffff', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8::/64'],
    ['::1', '::/64'],
  ])('counts %s as %s', (ip, subject) => {
    expect(lockoutSubject(ip)).toBe(subject);
  });
});
