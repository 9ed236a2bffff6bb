import Link from 'next/link';

export default function ConsoleNotFound() {
  return (
    <div className="rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
      <h1 className="text-2xl font-semibold">Not found</h1>
      <p className="mt-2 text-slate-700">There is nothing at this address in your company’s billing. It may belong to another company, or the link may be mistyped.</p>
      <p className="mt-4">
        <Link href="/console" className="text-blue-800 underline hover:text-blue-950">
          Back to the dashboard
        </Link>
      </p>
    </div>
  );
}
