import { withSettings } from '../env';

/** Every spelling of an address inside the network that a URL can carry. */
export const INTERNAL_URLS = [
  'http://127.0.0.1:5432/',
  'https://127.0.0.1/',
  'http://127.255.255.254/',
  'http://169.254.169.254/latest/',
  'http://10.0.0.8/',
  'http://172.16.5.4/',
  'http://172.31.255.255/',
  'http://192.168.1.1/',
  'http://100.64.0.1/',
  'http://100.127.255.255/',
  'http://0.0.0.0/',
  'http://0/',
  'http://224.0.0.1/',
  'http://239.255.255.250/',
  'http://255.255.255.255/',
  'http://198.18.0.1/',
  'http://192.0.2.1/',
  // decimal, hex, octal, short and odd spellings that `new URL` turns into dotted quads
  'http://2130706433/',
  'http://0x7f000001/',
  'http://0x7f.1/',
  'http://0177.0.0.1/',
  'http://017700000001/',
  'http://127.1/',
  'http://127.0.1/',
  'http://10.1/',
  'http://127.0.0.1./',
  'http://%31%32%37.0.0.1/',
  'http://\uff11\uff12\uff17.0.0.1/',
  'http://0xa9.0xfe.0xa9.0xfe/',
  'http://2852039166/',
  // IPv6
  'http://[::1]/',
  'http://[::]/',
  'http://[0:0:0:0:0:0:0:1]/',
  'http://[fe80::1]/',
  'http://[fc00::1]/',
  'http://[fd12:3456:789a::1]/',
  'http://[ff02::1]/',
  'http://[100::1]/',
  'http://[2001:db8::1]/',
  'http://[fec0::1]/',
  // IPv4 inside IPv6: mapped (dotted and hex), compatible, NAT64, 6to4
  'http://[::ffff:127.0.0.1]/',
  'http://[::ffff:7f00:1]/',
  'http://[0:0:0:0:0:ffff:10.0.0.1]/',
  'http://[::ffff:169.254.169.254]/',
  'http://[::ffff:a9fe:a9fe]/',
  'http://[::127.0.0.1]/',
  'http://[64:ff9b::10.0.0.1]/',
  'http://[64:ff9b::7f00:1]/',
  'http://[2002:7f00:1::]/',
  'http://[2002:a9fe:a9fe::1]/',
  // names that always mean this machine
  'http://localhost:3000/',
  'http://LOCALHOST/',
  'http://localhost./',
  'http://api.localhost/',
];

/** Public addresses and names, some looking close to internal ones. */
export const PUBLIC_URLS = [
  'https://hooks.example.com/billing',
  'http://8.8.8.8/',
  'http://100.63.255.255/',
  'http://100.128.0.1/',
  'http://172.15.255.255/',
  'http://172.32.0.1/',
  'http://11.0.0.1/',
  'http://134744072/',
  'http://[2606:4700:4700::1111]/',
  'http://[::ffff:8.8.8.8]/',
  'http://[64:ff9b::8.8.8.8]/',
  'http://[2002:808:808::1]/',
  'http://127.0.0.1.example.com/',
  'http://localhost.example.com/',
];

/** Runs `work` with the default rule (tests otherwise allow private destinations for their receivers). */
export function withoutPrivateDestinations<T>(work: () => Promise<T>): Promise<T> {
  return withSettings({ WEBHOOK_ALLOW_PRIVATE: undefined }, work);
}
