/** Every new console password (registration, invites, changes) has at least this many characters. */
export const MIN_PASSWORD_LENGTH = 12;
