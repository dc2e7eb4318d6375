/** Where Bull Board is mounted; shared by the board and the code that decides whether to mount it. */
export const BOARD_PATH = '/admin/queues';
