import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * The SSRF guard for webhook URLs: an operator may name any URL, so without it a webhook could
 * reach the service's own network (databases, cloud metadata at 169.254.169.254). Addresses in
 * private, loopback, link-local and other non-public ranges are refused, IPv4 and IPv6, including
 * every form that embeds an IPv4 address in IPv6: mapped `::ffff:a.b.c.d` and ISATAP interface ids
 * (`…:0:5efe:a.b.c.d`, `…:200:5efe:a.b.c.d`) are checked against the IPv4 ranges; the compatible
 * (`::a.b.c.d`), translated (SIIT, `::ffff:0:a.b.c.d`), NAT64, 6to4 and Teredo forms are refused
 * altogether (a translator or relay on the path would carry them to any IPv4 address).
 */
const FORBIDDEN = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  FORBIDDEN.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 96], // unspecified, loopback (::1) and IPv4-compatible
  ['::ffff:0:0:0', 96], // IPv4-translated (SIIT, RFC 2765): ::ffff:0:a.b.c.d
  ['64:ff9b::', 96], // NAT64
  ['64:ff9b:1::', 48],
  ['100::', 64], // discard
  ['2001::', 32], // Teredo
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  FORBIDDEN.addSubnet(net, prefix, 'ipv6');
}

/** The eight 16-bit groups of a valid IPv6 literal (`::` expanded, a trailing dotted quad read as two groups). */
function ipv6Groups(address: string): number[] {
  let text = address;
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const [head, tail] = text.split('::') as [string, string | undefined];
  if (tail === undefined) return groups(head);
  const [h, t] = [groups(head), groups(tail)];
  return [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
}

/**
 * The IPv4 address an ISATAP interface id carries (RFC 5214: `0000:5efe` or `0200:5efe`, with the
 * universal/group bits either way, then the IPv4 address), or undefined. Under any prefix: a site's
 * ISATAP router would carry it to that IPv4 address on its network.
 */
function isatapIpv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  if ((g[4]! & 0xfcff) !== 0 || g[5] !== 0x5efe) return undefined;
  return `${g[6]! >> 8}.${g[6]! & 0xff}.${g[7]! >> 8}.${g[7]! & 0xff}`;
}

/** True when `address` (an IP literal) is not a public unicast address. */
export function isForbiddenAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''); // brackets, IPv6 zone id
  const family = isIP(bare);
  if (family === 0) return true;
  if (family === 4) return FORBIDDEN.check(bare, 'ipv4');
  if (FORBIDDEN.check(bare, 'ipv6')) return true;
  const embedded = isatapIpv4(bare);
  return embedded !== undefined && FORBIDDEN.check(embedded, 'ipv4');
}

export class ForbiddenAddressError extends Error {
  readonly code = 'EWEBHOOKADDRESS';
  constructor(host: string, address: string) {
    super(`${host} resolves to ${address}, a private, loopback or link-local address`);
    this.name = 'ForbiddenAddressError';
  }
}

const resolveAll = (host: string): Promise<LookupAddress[]> =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/** The host of a URL without IPv6 brackets. */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[|\]$/g, '');

/**
 * Resolves `host` (throwing when it does not resolve) and, unless `allowPrivate`, throws
 * ForbiddenAddressError when any of its addresses is forbidden (one bad address among good ones
 * is enough: a connection may pick it).
 */
export async function checkHost(host: string, allowPrivate = false): Promise<void> {
  const addresses = isIP(host) ? [{ address: host }] : await resolveAll(host);
  if (allowPrivate) return;
  const bad = addresses.find((a) => isForbiddenAddress(a.address));
  if (bad) throw new ForbiddenAddressError(host, bad.address);
}

/**
 * A `lookup` for sockets that checks what it resolved before the socket connects to it: the
 * address checked is the address connected to, so a DNS answer that changes between a check and
 * the connection (DNS rebinding) cannot slip through. IP literals never reach a lookup: the
 * sender checks those itself.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const bad = addresses.find((a) => isForbiddenAddress(a.address));
    if (bad) return callback(new ForbiddenAddressError(hostname, bad.address) as NodeJS.ErrnoException, '', 0);
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
};
