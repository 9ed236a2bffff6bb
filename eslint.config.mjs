import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['.next/**', 'node_modules/**', '.data/**', '.test-data/**', 'test-results/**', 'playwright-report/**', 'next-env.d.ts', 'drizzle/**', 'bench/results/**', 'dist/**', 'sdk/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', fetch: 'readonly', AbortSignal: 'readonly', window: 'readonly', document: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/ban-ts-comment': ['error', { 'ts-expect-error': 'allow-with-description' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // The Stripe.js stand-in the local Stripe server sends to browsers: a classic script in plain ES2017.
    files: ['local-stripe/stripe-js.js'],
    languageOptions: { sourceType: 'script', globals: { navigator: 'readonly', HTMLElement: 'readonly', Event: 'readonly', Promise: 'readonly', XMLHttpRequest: 'readonly' } },
    // Callbacks keep their element as `self`, as ES5-style code does.
    rules: { '@typescript-eslint/no-this-alias': 'off' },
  },
);
