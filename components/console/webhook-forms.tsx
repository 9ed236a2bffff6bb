'use client';
import { useId } from 'react';
import { ActionForm, Field, type FormAction } from './action-form';

export type TopicOption = { topic: string; help: string };

function TopicBoxes({ topics, checked, legend }: { topics: TopicOption[]; checked: string[]; legend: string }) {
  const id = useId();
  return (
    <fieldset className="rounded border border-slate-300 p-3">
      <legend className="px-1 text-sm font-semibold">{legend}</legend>
      <ul className="space-y-2">
        {topics.map((t) => (
          <li key={t.topic} className="flex items-start gap-2">
            <input type="checkbox" id={`${id}-${t.topic}`} name="topics" value={t.topic} defaultChecked={checked.includes(t.topic)} aria-describedby={`${id}-${t.topic}-help`} className="mt-1 h-4 w-4" />
            <div>
              <label htmlFor={`${id}-${t.topic}`} className="font-mono text-sm font-medium">
                {t.topic}
              </label>
              <p id={`${id}-${t.topic}-help`} className="text-xs text-slate-700">
                {t.help}
              </p>
            </div>
          </li>
        ))}
      </ul>
    </fieldset>
  );
}

export function NewWebhookForm({ action, topics }: { action: FormAction; topics: TopicOption[] }) {
  return (
    <ActionForm action={action} submitLabel="Create webhook" pendingLabel="Creating…" label="New webhook">
      <Field name="url" label="URL" type="url" autoComplete="off" hint="Such as https://example.com/billing-webhooks. It must be reachable from the internet (private and loopback addresses are refused). We POST JSON there; answer 2xx within 10 seconds or we retry for about a day." />
      <div className="grid grid-cols-1 gap-3 sm:grid-cols-2">
        <Field name="username" label="Basic auth username (optional)" autoComplete="off" />
        <Field name="password" label="Basic auth password (optional)" type="password" autoComplete="new-password" />
      </div>
      <TopicBoxes topics={topics} checked={[]} legend="Topics to send" />
    </ActionForm>
  );
}

export function TopicsForm({ action, topics, subscribed }: { action: FormAction; topics: TopicOption[]; subscribed: string[] }) {
  return (
    <ActionForm action={action} submitLabel="Save topics" pendingLabel="Saving…" label="Topics" resetOnSuccess={false} className="space-y-3">
      <TopicBoxes topics={topics} checked={subscribed} legend="Send these topics" />
    </ActionForm>
  );
}
