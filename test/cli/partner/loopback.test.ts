import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../../src/cli/partner/loopback.js';

/** The host as `new URL(...).hostname` gives it, which is what args.ts checks. */
const hostOf = (url: string) => new URL(url).hostname;

describe('isLoopbackHost', () => {
  it.each([
    'http://localhost:3000',
    'http://LOCALHOST',
    'http://localhost.',
    'http://api.localhost',
    'http://a.b.localhost:8080',
    'http://127.0.0.1:3000',
    'http://127.255.255.254',
    'http://127.1', // note: the URL parser writes it out as 127.0.0.1, as it does 0x7f.1
    'http://0x7f.1',
    'http://[::1]:3000',
    'http://[0:0:0:0:0:0:0:1]',
  ])('%s names this machine', (url) => {
    expect(isLoopbackHost(hostOf(url))).toBe(true);
  });

  it.each([
    'http://api.example.com',
    'http://localhost.example.com', // a real domain whose first label is "localhost"
    'http://mylocalhost',
    'http://localhost@evil.example', // userinfo: the host is evil.example
    'http://127.0.0.1.nip.io', // a DNS name that merely starts like the loopback address
    'http://128.0.0.1',
    'http://10.0.0.1',
    'http://0.0.0.0',
    'http://[::2]',
    'http://[2001:db8::1]',
  ])('%s may be another machine', (url) => {
    expect(isLoopbackHost(hostOf(url))).toBe(false);
  });
});
