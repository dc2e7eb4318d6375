import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // note: the client package's generated types are openapi-typescript's output, checked by the drift test.
  { ignores: ['dist/', 'coverage/', 'bench/results/', 'node_modules/', 'packages/client/dist/', 'packages/client/src/generated/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Tests read untyped JSON replies and rows all the time; asserting on them is their job.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
    },
  },
  {
    // Plain JavaScript outside the TypeScript project: the config itself, the bin launcher, the
    // benchmark's step recorder and the flood's worker thread.
    files: ['eslint.config.js', 'bin/**/*.js', 'bench/**/*.js', 'test/**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
