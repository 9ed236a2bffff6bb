import Link from 'next/link';

export default function Home() {
  return (
    <main className="mx-auto max-w-2xl p-8">
      <h1 className="text-2xl font-semibold">Usage-based billing</h1>
      <p className="mt-2 text-slate-700">The JSON API lives under <code>/v1</code>. Company admins sign in to the console.</p>
      <ul className="mt-4 list-disc pl-6">
        <li><Link className="text-blue-800 underline" href="/console">Console</Link></li>
        <li><Link className="text-blue-800 underline" href="/docs">API reference</Link></li>
        <li><a className="text-blue-800 underline" href="/health">Health</a></li>
      </ul>
    </main>
  );
}
