/** This package's version (its package.json's; a test keeps them equal), in the default User-Agent. */
export const CLIENT_VERSION = '0.4.4';
