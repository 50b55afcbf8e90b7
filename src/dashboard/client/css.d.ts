/** Stylesheets are imported for the bundler, which emits them as the dashboard's CSS file. */
declare module "*.css";
