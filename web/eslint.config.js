// ESLint for the web console (make lint): the recommended rules, browser globals, ES modules.
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["console/**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.browser },
    rules: { "no-unused-vars": ["error", { caughtErrors: "none" }], eqeqeq: "error", "no-var": "error",
      "prefer-const": "error" },
  },
  {
    files: ["test/**/*.js", "eslint.config.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.node },
  },
];
