'use client';
import { ActionForm, Field, type FormAction } from './action-form';
import { MIN_PASSWORD_LENGTH } from '@/lib/password-policy';

export function InviteForm({ action }: { action: FormAction }) {
  return (
    <ActionForm action={action} submitLabel="Invite admin" pendingLabel="Inviting…" label="Invite an admin" className="space-y-3">
      <Field name="email" label="Their email" type="email" autoComplete="off" />
      <Field name="password" label="A password for them" type="password" autoComplete="new-password" hint={`At least ${MIN_PASSWORD_LENGTH} characters. Tell them privately; they can change it after signing in.`} />
    </ActionForm>
  );
}

export function ChangePasswordForm({ action, email }: { action: FormAction; email: string }) {
  return (
    <ActionForm action={action} submitLabel="Change password" pendingLabel="Saving…" label="Change your password" className="space-y-3">
      {/* Lets password managers tie the new password to this sign-in. */}
      <input type="text" name="username" autoComplete="username" value={email} readOnly hidden />
      <Field name="current_password" label="Current password" type="password" autoComplete="current-password" />
      <Field
        name="new_password"
        label="New password"
        type="password"
        autoComplete="new-password"
        hint={`At least ${MIN_PASSWORD_LENGTH} characters. Every session of yours ends, this one too: you sign in again with the new password.`}
      />
    </ActionForm>
  );
}

export function RemoveAdminForm({ action, email }: { action: FormAction; email: string }) {
  return <ActionForm action={action} submitLabel="Remove" confirm={`Remove ${email}`} variant="danger" pendingLabel="Removing…" label={`Remove ${email}`} className="space-y-2" />;
}
